"""The offline cartoon drawing engine and the sticker prompt grammar, a library of its own.

Both the worker's ``local`` provider and the AI provider simulator (``simulators.ai``) use it; it imports
no service (only :mod:`shared`). Layout:

- :mod:`cartoon.grammar`: the structural lines of the prompts, written by the worker and read back here;
- :mod:`cartoon.offline`: every call kind answered from pixels (drawing requests, vision answers);
- :mod:`cartoon.sheets`: green-screen sheets of figures (spec/002 "Sheets"), outfit thumbnails;
- :mod:`cartoon.figure` and its parts (body, canvas, garments, headwear, hands, props, effects, poses,
  face_cartoon, colors); :mod:`cartoon.composite` (a cut head on a drawn body);
- :mod:`cartoon.appearance`: appearance measured from pixels (the offline vision answers).

Units are design px of a 512 × 512 cell unless a docstring says otherwise.
"""
