"""Multi-run studies: commands that derive, run and summarise many ``featlearn fit`` trials.

:mod:`~featlearn.studies.trials` (a trial's config, digest, resume, submitit jobs),
:mod:`~featlearn.studies.compare` (several methods on one experiment),
:mod:`~featlearn.studies.samples` (sample complexity n*(d)) and
:mod:`~featlearn.studies.teacher_check` (Figure 26's check of Algorithm 1). A study is
handed the command line's ``build`` and never imports it.
"""
