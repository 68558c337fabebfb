def test_import():
    import sf_envs  # noqa: F401
