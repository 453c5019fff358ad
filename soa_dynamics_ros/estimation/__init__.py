"""Estimation on a model kept against measured state: external joint torques and the
wrench behind them (generalized-momentum observer), contact detection on that
estimate.  Payload identification is :meth:`RobotModel.identify_payload`;
:func:`accelerations` differentiates recorded joint rates for it.

Above the model layer, below the embedded-model layer; numpy only.
"""
from .contact import ContactDetector
from .observer import ExternalTorqueObserver
from .samples import accelerations

__all__ = ["ExternalTorqueObserver", "ContactDetector", "accelerations"]
