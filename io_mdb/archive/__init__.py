"""NWN2 archives as folders: the game's Data zips and ERF packs (.hak, .erf, .mod); docs/nwn2.md §5.8."""
