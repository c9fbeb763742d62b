import loopax

# Until loopax/__init__.py re-exports them (the lead's file), make the seeds'
# top-level names available.
for _name, _value in (("Model", loopax.models.Model), ("Sequential", loopax.models.Sequential)):
    if not hasattr(loopax, _name):
        setattr(loopax, _name, _value)
