"""Numerical back-ends of the designer that know nothing of privacy words (private: no stable API): extreme rays
of polyhedral cones, the ray LP, slices of the notions' cones, the barrier and mirror-descent methods for design
weights, the class-orbit program, the unary-encoding barrier, the relaxation dual, one BLAS thread. Imports nothing
else from lipdesign, and nothing on the device path (the mechanisms) imports it."""
