"""Granny 2 skeletons and animations as NWN2 ships them (docs/nwn2.md §5): the part of io_mdb that knows no MDB.

The file's magic is here, not in the codec, so that the family's registry entry can sniff a file without
importing the codec (and numpy) when the add-on loads.
"""

# Granny 2, little-endian with 32-bit pointers: the only kind NWN2 ships (docs/nwn2.md §5.1)
MAGIC = bytes.fromhex("b867b0caf86db10f84728c7e5e19001e")
