"""MikuMikuDance poses: the VPD codec (`vpd`)."""
