"""The settings travel as the one object (issue 22, point 5): the rerun form builds it on the
study's, the run stores its dict once and reads it back as the object."""

from __future__ import annotations

import pytest

from analysis.forms import RunForm
from analysis.models import AnalysisRun
from analysis.services import analysis_run_create
from core.settings import AnalysisSettings

pytestmark = pytest.mark.django_db


def test_the_form_builds_the_object_on_the_studys_and_the_run_reads_it_back(alice, make_study):
    study = make_study(alice)
    study.analysis = AnalysisSettings.from_mapping({"seed": 7, "simple_threshold": 2})
    study.save(update_fields=["analysis_settings"])
    data = {name: value for name, value in RunForm.initial_from(study.analysis).items()
            if value is not None}
    data.update(level="interval", seed="", excluded_annotators="")  # empty: the study's
    form = RunForm(data)
    assert form.is_valid(), form.errors
    settings = form.run_settings(base=study.analysis)
    assert isinstance(settings, AnalysisSettings)
    assert (settings.level, settings.seed, settings.simple_threshold) == ("interval", 7, 2)
    run = analysis_run_create(study=study, settings=settings, enqueue=False)
    stored = AnalysisRun.objects.get(pk=run.pk)
    assert stored.settings == settings.to_dict()  # stored once, as its dict
    assert stored.analysis == settings  # read back as the same object
