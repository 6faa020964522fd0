"""The real test tier: real API servers on loopback judge what the program renders."""
