"""Shared pure-torch primitives, each tested on its own against scipy/OpenCV."""
