"""Plot-only stand-in for seaborn (not installed in either venv): calls do nothing."""


def __getattr__(name):
    return lambda *args, **kwargs: None
