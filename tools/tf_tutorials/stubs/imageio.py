"""Plot-only stand-in for imageio (GIF writing) (not installed in either venv): calls do nothing."""


def __getattr__(name):
    return lambda *args, **kwargs: None
