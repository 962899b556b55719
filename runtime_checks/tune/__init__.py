"""--tune: the user's loader measured at the settings they could choose, and which to use.

`grid` the settings tried and their loaders, `probes` the memory read while one runs, `run` the
measuring under a time budget, `advice` the recommendation, `output` the table and the plot.
"""
