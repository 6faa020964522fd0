"""What the offline test modules share: base values, builders and helpers several of them use, one
module per test module they came from (tests/test_X.py -> X.py). Never imports tests/."""
