"""The leaderboard: closed-book datasets, submissions and the board that ranks them (issue 27)."""
