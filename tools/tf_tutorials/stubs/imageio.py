"""Plot-only stand-in for imageio (GIF writing) (not installed in either venv): calls do
nothing; `get_writer` gives a writer that takes frames and drops them."""


class _Writer:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def append_data(self, *args, **kwargs):
        return None

    def close(self):
        return None


def get_writer(*args, **kwargs):
    return _Writer()


def __getattr__(name):
    return lambda *args, **kwargs: None
