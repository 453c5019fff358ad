"""Composite-body mass matrix (CRBA): a gather of composite inertias, then H^T R H."""
import numpy as np

from ..multibody.spatial import dtype_of, transformed_inertia
from .kinematics import parent_to_child_transforms


def mass_matrix(tree, q_hinge):
    """The nb x nb hinge-space mass matrix (row and column 0, the root, are zero)."""
    transforms = parent_to_child_transforms(tree, q_hinge)
    composite = tree.body_inertia.copy()
    for body in range(tree.nb - 1, 0, -1):
        parent = tree.parent[body]
        if parent > 0:
            composite[parent] += transformed_inertia(transforms[body], composite[body])
    mass = np.zeros((tree.nb, tree.nb), dtype=dtype_of(composite, transforms))
    hinge_map = tree.hinge_map
    for body in range(1, tree.nb):
        # The force needed to accelerate the composite body at unit hinge rate,
        # carried towards the root and projected on each ancestor's hinge.
        force = composite[body] @ hinge_map[body]
        mass[body, body] = hinge_map[body] @ force
        ancestor = body
        while tree.parent[ancestor] > 0:
            force = transforms[ancestor].T @ force
            ancestor = tree.parent[ancestor]
            mass[body, ancestor] = mass[ancestor, body] = hinge_map[ancestor] @ force
    return mass
