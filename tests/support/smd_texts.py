"""Small SMD texts the SMD tests share: a three-bone rig, and a reference on it whose second triangle repeats a
vertex (Blender drops such a triangle on import; HammerAddons' eggbotstart has 7)."""

RIG3 = """version 1
nodes
0 "root" -1
1 "arm" 0
2 "hand" 1
end
skeleton
time 0
0 0 0 0 0 0 0
1 0 0 1 0 0 0
2 0 0 2 0 0 0
end
"""

# three triangles, one per bone; the middle one repeats a vertex
DROPPED_TRIANGLE_REF = RIG3 + """triangles
mat
0 0 0 0 0 0 1 0 0 1 0 1
0 1 0 0 0 0 1 1 0 1 0 1
0 0 1 0 0 0 1 0 1 1 0 1
mat
1 0 0 1 0 0 1 0 0 1 1 1
1 0 0 1 0 0 1 0 0 1 1 1
1 1 0 1 0 0 1 1 0 1 1 1
mat
2 0 0 2 0 0 1 0 0 1 2 1
2 1 0 2 0 0 1 1 0 1 2 1
2 0 1 2 0 0 1 0 1 1 2 1
end
"""
