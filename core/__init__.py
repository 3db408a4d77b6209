"""Neutral model and helpers shared by every format. No bpy here."""
