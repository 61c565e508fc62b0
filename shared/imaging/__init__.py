"""Pure image helpers shared by the services and the :mod:`cartoon` engine (arrays and bytes in, arrays
and bytes out, no I/O): face detection, CIELAB colour and skin measurement, premultiplied resampling,
photo decoding."""
