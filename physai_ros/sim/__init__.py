"""The MuJoCo simulation behind the sim bridge: the backend, the pick scene, soft objects."""
