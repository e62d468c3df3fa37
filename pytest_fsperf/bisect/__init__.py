"""`fsperf bisect`: the commit that made a filesystem slower, found with the release gate."""
