"""The anti-forgery layers of one grading session: which paths of a patch belong to the test
harness (``harness_paths``) and their restoration (``guard``), what stays root's while the tests
run (``lockdown``), the graded files written by root and the sentinel plugin (``session_layers``,
``sentinel``, ``sentinel_plugin``), the graded tests located and their text after the test patch
(``graded_tests``), the runners whose verdict is their log alone (``log_canaries``), the secret
markers and JUnit cross-check (``verdict``) and the static screen (``screen``)."""
