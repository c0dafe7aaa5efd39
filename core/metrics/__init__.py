"""Pure metric code: coreference and similarity metrics, readers, controls, error features.

Nothing here imports Django; see docs/metrics.md for every definition.
"""
