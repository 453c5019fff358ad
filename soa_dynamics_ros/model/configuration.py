"""The configuration space of a model: ``nq``, ``nv``, ``integrate``, ``difference`` and
``neutral_configuration``, named as Pinocchio names them.

A fixed-base model's configurations form a vector space (a continuous joint is one
angle), so these are the trivial ones; a floating-base model
(:mod:`.floating_base`) has a unit quaternion in ``q`` and overrides them.
"""
import math

import numpy as np

from ..errors import InvalidInputError
from ..validation import as_vector


def time_step(dt):
    """A finite float ``dt``, or :class:`InvalidInputError`."""
    try:
        step = float(dt)
    except (TypeError, ValueError):
        raise InvalidInputError(f"dt must be a number, not {type(dt).__name__}") from None
    if not math.isfinite(step):
        raise InvalidInputError(f"dt must be finite, not {step}")
    return step


class ConfigurationSpace:
    """The configuration-space operations of a model whose ``q`` is a vector of ``dof``."""

    @property
    def nq(self):
        """Entries of a configuration ``q``."""
        return self.dof

    @property
    def nv(self):
        """Entries of a velocity, acceleration or generalized force."""
        return self.dof

    def neutral_configuration(self):
        """Every joint at zero."""
        return np.zeros(self.nq)

    def integrate(self, q, v, dt):
        """The configuration reached from ``q`` moving at constant velocity ``v`` for ``dt``."""
        q, v = as_vector("q", q, self.nq), as_vector("v", v, self.nv)
        return q + v * time_step(dt)

    def difference(self, q0, q1):
        """The velocity that moves ``q0`` to ``q1`` in unit time: ``integrate(q0, d, 1) == q1``."""
        return as_vector("q1", q1, self.nq) - as_vector("q0", q0, self.nq)
