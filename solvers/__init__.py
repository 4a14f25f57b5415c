"""Numerical back-ends that know nothing of privacy words: extreme rays of polyhedral cones, the ray LP,
closed forms as plain functions of arrays. Imports nothing from lipdesign."""
