"""GPU energy and its carbon: grid intensity (grids, data/grid_intensity.json) and the config's energy: (settings)."""
