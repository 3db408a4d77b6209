"""Hostile `.tex` cases: they live with the puppet cases (hostile_wepuppet.py), which build both."""
from .hostile_wepuppet import texture_cases as cases, texture_seeds as seeds  # noqa: F401
