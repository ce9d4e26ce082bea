import numpy as np
from numpy.typing import NDArray
RealArray = NDArray[np.float_]
