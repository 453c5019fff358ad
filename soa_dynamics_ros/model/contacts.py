"""Standing on contacts: whole-body gravity compensation and contact dynamics.

A contact is a link frame that does not move: ``Contact(frame, "point")`` holds the
frame origin (3 rows: a force), ``Contact(frame, "flat")`` the whole frame (6 rows:
a force and a moment, a flat foot).  Contact wrenches are in world axes (root-link
axes on a fixed-base model), about the contact frame's origin, acting *on* the
robot, rows as :meth:`RobotModel.jacobian`'s: ``[fx, fy, fz]`` or
``[fx, fy, fz, tx, ty, tz]``.  docs/floating_base.md, "Standing on contacts".
"""
from typing import NamedTuple

import numpy as np

from ..errors import (InvalidInputError, UnbalancedContactsError, UnknownNameError, shown,
                      shown_names)

CONTACT_ROWS = {"point": 3, "flat": 6}
# The base rows are balanced when what the contact wrenches leave of the base's
# gravity wrench is at most this fraction of it; otherwise the contact set cannot
# hold the robot and whole_body_gravity refuses it.
BALANCE_TOLERANCE = 1e-9
# Singular values of the base rows' map below this fraction of the largest are
# directions the contacts cannot push in (the minimum-norm solution leaves them out).
_RANK_RCOND = 1e-12


class Contact(NamedTuple):
    """A contact frame held still: ``kind`` is ``"point"`` (3 rows) or ``"flat"`` (6)."""
    frame: str
    kind: str


class WholeBodyGravity(NamedTuple):
    """Result of :meth:`RobotModel.whole_body_gravity`.

    ``g(q) = S^T tau + sum_c J_c^T w_c`` with the base rows balanced to ``residual``.
    """
    tau: np.ndarray                 # actuated joints, joint_names order
    contact_wrenches: dict          # frame -> 3 or 6 wrench on the robot, world axes
    residual: float                 # |base rows of g - sum J_c^T w_c| (N, N m), balanced


class ContactDynamics(NamedTuple):
    """Result of :meth:`RobotModel.contact_dynamics`: ``M a + h = tau + sum_c J_c^T w_c``
    with every contact's rows of the classical acceleration zero."""
    a: np.ndarray                   # accelerations, nv (dof on a fixed-base model)
    contact_wrenches: dict          # frame -> 3 or 6 wrench on the robot, world axes
    rank: int                       # independent contact rows used
    hybrid: object                  # the HybridDynamics it was read from (method, torques)


def parse_contacts(frame_names, contacts):
    """``[Contact]`` of ``contacts`` (a list or tuple of ``(frame, kind)`` pairs), checked
    against ``frame_names``: InvalidInputError for a malformed set, UnknownNameError for
    an unknown frame."""
    if isinstance(contacts, (str, bytes)) or not isinstance(contacts, (list, tuple)):
        raise InvalidInputError("contacts must be a list of (frame, kind) pairs, kind "
                                f"'point' or 'flat', not {type(contacts).__name__}")
    if not 1 <= len(contacts) <= len(frame_names):
        raise InvalidInputError(f"contacts must name between 1 and {len(frame_names)} frames, "
                                f"not {len(contacts)}")
    known, parsed, seen = set(frame_names), [], set()
    for index, contact in enumerate(contacts):
        if isinstance(contact, (str, bytes)) or not isinstance(contact, (list, tuple)) \
                or len(contact) != 2:
            raise InvalidInputError(f"contact {index} must be a (frame, kind) pair, kind "
                                    "'point' or 'flat'")
        frame, kind = contact
        if type(frame) is not str or frame not in known:
            raise UnknownNameError("frame", frame, frame_names)
        if type(kind) is not str or kind not in CONTACT_ROWS:
            raise InvalidInputError(f"contact {index} ({shown(frame)}): kind must be 'point' or "
                                    f"'flat', not {shown(kind)}")
        if frame in seen:
            raise InvalidInputError(f"contact {index}: frame {shown(frame)} is named twice")
        seen.add(frame)
        parsed.append(Contact(frame, kind))
    return parsed


def contact_jacobian(model, q, contacts):
    """The stacked contact rows of the frames' Jacobians, world axes."""
    return np.vstack([model.jacobian(q, contact.frame)[:CONTACT_ROWS[contact.kind]]
                      for contact in contacts])


def split_wrenches(contacts, stacked):
    """``{frame: its rows of stacked}``."""
    wrenches, start = {}, 0
    for contact in contacts:
        rows = CONTACT_ROWS[contact.kind]
        wrenches[contact.frame] = stacked[start:start + rows].copy()
        start += rows
    return wrenches


def whole_body_gravity(model, q, contacts, base_rows):
    """:meth:`RobotModel.whole_body_gravity` of a model whose first ``base_rows``
    generalized forces are unactuated (6 on a free base, 0 on a fixed one)."""
    contacts = parse_contacts(model.frame_names, contacts)
    gravity = model.gravity_torques(q)
    jacobian = contact_jacobian(model, q, contacts)
    base_gravity = gravity[:base_rows]
    if base_rows:
        # Minimum-norm contact wrenches that balance the base rows: the pseudo-inverse
        # of the base columns' transpose, through its singular directions.
        base_map = jacobian[:, :base_rows].T
        left, values, right = np.linalg.svd(base_map, full_matrices=False)
        keep = values > _RANK_RCOND * values[0]
        stacked = right[keep].T @ ((left[:, keep].T @ base_gravity) / values[keep])
        residual = float(np.linalg.norm(base_gravity - base_map @ stacked))
        scale = float(np.linalg.norm(base_gravity))
        if residual > BALANCE_TOLERANCE * scale:
            points = sum(contact.kind == "point" for contact in contacts)
            names = (f"{shown_names(contact.frame for contact in contacts)} ({points} point, "
                     f"{len(contacts) - points} flat)")
            raise UnbalancedContactsError(
                f"the contacts {names} cannot hold robot {shown(model.name)} still at this q: "
                f"the best contact wrenches leave {residual:.6g} (N, N m) of the base's "
                f"{scale:.6g} gravity wrench unbalanced (relative {residual / scale:.3g}, "
                f"more than {BALANCE_TOLERANCE:g}); add contacts, or flat ones",
                residual, residual / scale)
    else:
        stacked, residual = np.zeros(len(jacobian)), 0.0
    tau = gravity[base_rows:] - jacobian[:, base_rows:].T @ stacked
    return WholeBodyGravity(tau, split_wrenches(contacts, stacked), residual)


def contact_constraints(contacts):
    """Hybrid-dynamics constraints ``(frame, alpha, 0)`` holding each contact's rows still."""
    identity = np.eye(6)
    return [(contact.frame, identity[:, :CONTACT_ROWS[contact.kind]],
             np.zeros(CONTACT_ROWS[contact.kind])) for contact in contacts]
