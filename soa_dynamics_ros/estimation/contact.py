"""Contact detection on estimated external joint torques: thresholds with hysteresis."""
import numpy as np

from ..errors import InvalidInputError
from ..validation import as_float_array, as_vector

DEFAULT_RELEASE_RATIO = 0.5


class ContactDetector:
    """Contact when any joint's ``|external torque|`` exceeds its threshold; released
    when every joint is back below ``release_ratio`` times its threshold.

    ``thresholds``: one number for every joint, or one per joint (model order;
    N m or N).  ``release_ratio`` in (0, 1]: 1 means no hysteresis.  The
    estimate's own errors (the model's, the measured torques', friction the
    model does not know) set how low the thresholds can go: README's
    "Estimation" section has measured false-alarm margins.
    """

    def __init__(self, thresholds, release_ratio=DEFAULT_RELEASE_RATIO):
        thresholds = np.atleast_1d(as_float_array("thresholds", thresholds,
                                                  "number or vector, one per joint"))
        if thresholds.ndim != 1 or thresholds.size == 0:
            raise InvalidInputError("thresholds must be a number or a vector, one per joint")
        thresholds = as_vector("thresholds", thresholds, thresholds.size)
        if np.any(thresholds <= 0.0):
            raise InvalidInputError(f"thresholds must be positive, got {thresholds.tolist()}")
        try:
            release_ratio = float(release_ratio)
        except (TypeError, ValueError):
            raise InvalidInputError(f"release_ratio must be a number, not {release_ratio!r}") \
                from None
        if not 0.0 < release_ratio <= 1.0:
            raise InvalidInputError(f"release_ratio must be in (0, 1], got {release_ratio}")
        self.thresholds = thresholds
        self.release_ratio = release_ratio
        self.reset()

    def reset(self):
        self._in_contact = False
        self._joints = []

    @property
    def in_contact(self):
        return self._in_contact

    @property
    def joints(self):
        """Indices of the joints above their threshold at the latest update."""
        return list(self._joints)

    def update(self, external_torques):
        """Take one estimate (model order); returns whether the robot is in contact."""
        size = self.thresholds.size if self.thresholds.size > 1 else np.size(external_torques)
        magnitude = np.abs(as_vector("external_torques", external_torques, size))
        above = magnitude > self.thresholds
        if above.any():
            self._in_contact = True
        elif self._in_contact and np.all(magnitude < self.release_ratio * self.thresholds):
            self._in_contact = False
        self._joints = np.flatnonzero(above).tolist()
        return self._in_contact
