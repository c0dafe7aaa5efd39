from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from studies.models import Question

        from .selectors import questions_forget

        def forget(sender: type[Question], instance: Question, **kwargs: object) -> None:
            questions_forget(study_id=instance.study_id)

        # weak=False: a signal holds its receivers weakly, and this function lives nowhere else.
        for signal in (post_save, post_delete):
            signal.connect(forget, sender=Question, weak=False,
                           dispatch_uid="annotation.questions_forget")
