"""Budgets over time that Kueue can enforce: what a budget is (model), its periods, what it has
spent (spend), and what follows at its thresholds and at 100% (holds). Pure."""
