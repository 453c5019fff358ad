"""Comparisons and random inputs shared by the numeric tests."""
import numpy as np


def assert_close(actual, expected, what, rtol=1e-9):
    """Agreement to ``rtol`` relative to the size of the expected quantity."""
    expected = np.asarray(expected, dtype=float)
    scale = max(1.0, float(np.abs(expected).max()) if expected.size else 1.0)
    np.testing.assert_allclose(actual, expected, rtol=0.0, atol=rtol * scale, err_msg=what)


def random_states(model, count, rng):
    """``count`` random (q, qd, qdd) for reference comparisons."""
    for _ in range(count):
        yield (rng.uniform(-np.pi, np.pi, model.dof), rng.normal(size=model.dof) * 2,
               rng.normal(size=model.dof) * 3)


def random_wrenches(model, rng):
    """Wrenches on up to 3 random links (root-attached ones included: they do no work)."""
    links = rng.choice(model.frame_names, size=min(3, len(model.frame_names)), replace=False)
    return {str(link): rng.normal(size=6) * 10 for link in links}
