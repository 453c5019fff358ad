"""Disabling a model's numpy path (soa_dynamics_ros/model/reference.py) in a test, so that
an answer that silently came from numpy instead of compiled code fails it.

The functions of the reference module named are wrapped, once per process, by guards
that raise for the models disabled and pass every other model's calls through.
"""
import weakref

from soa_dynamics_ros.model import reference

# The numpy path of the single calls (gravity and bias torques go through inverse_dynamics).
SINGLE_CALLS = ("inverse_dynamics", "mass_matrix", "forward_dynamics", "jacobian", "frame_pose")
_disabled = weakref.WeakKeyDictionary()        # model -> names of its refused functions


def _guarded(name, function):
    def guarded(model, *arguments, **options):
        if name in _disabled.get(model, ()):
            raise AssertionError(f"the numpy path answered ({name})")
        return function(model, *arguments, **options)
    guarded.unguarded = function
    return guarded


def disable_numpy_path(model, names=SINGLE_CALLS):
    """From now on ``model``'s numpy path of ``names`` raises AssertionError; ``model``."""
    for name in names:
        function = getattr(reference, name)
        if not hasattr(function, "unguarded"):
            setattr(reference, name, _guarded(name, function))
    _disabled.setdefault(model, set()).update(names)
    return model


def enable_numpy_path(model):
    """``model``'s numpy path answers again."""
    _disabled.pop(model, None)
