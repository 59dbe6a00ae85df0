"""An emulated SO-101 servo bus on a pseudo-terminal: STS3215 servos speaking the real
protocol, their motion from MuJoCo physics.
"""
