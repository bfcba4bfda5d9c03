"""Fixtures of the loop tests.

Ray workers import modules by name from the driver's working directory, where ``tests/`` is not a
package; test doubles (``fakes``) and the helper actors of these tests are therefore shipped to
the workers by value.
"""

from __future__ import annotations

import ray.cloudpickle

import loop_helpers

ray.cloudpickle.register_pickle_by_value(loop_helpers)
