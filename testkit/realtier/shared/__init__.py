"""What the real-tier test modules share: the helpers, constants and fixtures several of them
use, one module per test module they came from (tests/realtier/test_X.py -> X.py). Never imports
tests/."""
