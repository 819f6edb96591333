"""Algorithm 1 of Shi et al. (2022, E.5): the teacher that labels a mixture, which ``featlearn fit`` runs.

Not a study: a config's top-level ``teacher:`` section runs it before the student trains.
:mod:`~featlearn.teacher.search` chooses and trains the teacher, :mod:`~featlearn.teacher.cache`
keeps trained teachers on disk, :mod:`~featlearn.teacher.report` writes what it did into the run.
"""

from featlearn.teacher.cache import TeacherCache, default_cache_dir
from featlearn.teacher.search import TeacherSearch, build_network, first_local_minimum

__all__ = ["TeacherCache", "TeacherSearch", "build_network", "default_cache_dir", "first_local_minimum"]
