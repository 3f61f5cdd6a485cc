"""A pytest plugin for mutation runs: Hypothesis reports the first failing example as it
is, without shrinking or explaining it. A mutant's run needs to know that a test fails,
not the smallest example; shrinking took two thirds of a run's time.

tools/mutants.py puts this folder on PYTHONPATH and passes `-p no_shrinking`. The profile
is loaded on import, before the tests' conftest.py builds its settings objects, so that
theirs inherit these phases too."""
from hypothesis import Phase, settings

settings.register_profile("mutants", phases=(Phase.explicit, Phase.reuse, Phase.generate))
settings.load_profile("mutants")
