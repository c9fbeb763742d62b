"""tests/layers mirrors loopax/src/layers: the base layer's tests here, each family's in
its folder. The helpers every family uses (`layer_checks`, `compile_once`) live here;
pytest puts this folder on `sys.path` for the tests below it."""
