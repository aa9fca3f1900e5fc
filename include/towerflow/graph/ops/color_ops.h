// Builders for the colour-space ops of image preprocessing: RGBToHSV,
// HSVToRGB, AdjustHue, AdjustSaturation, AdjustContrastv2. Names, inputs, arithmetic and errors
// are TensorFlow's: the last dimension holds 3 channels (RGB or HSV, each in
// [0, 1]); AdjustHue, AdjustSaturation and AdjustContrast take float32 images
// of rank 3 or more. Each returns the node's output, or a null Output with the error
// recorded in the scope (see scope.h). No gradients, as in TF1.
#ifndef TOWERFLOW_GRAPH_OPS_COLOR_OPS_H_
#define TOWERFLOW_GRAPH_OPS_COLOR_OPS_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include "towerflow/graph/scope.h"

namespace tw {

// RGB pixels (float or double) as [hue, saturation, value], each in [0, 1].
Output RGBToHSV(const Scope& scope, const Output& images);

// HSV pixels (float or double) back to RGB.
Output HSVToRGB(const Scope& scope, const Output& images);

// The hue of each pixel turned by `delta` (a float scalar, in turns: 1 is a
// full turn), its min and max channel kept.
Output AdjustHue(const Scope& scope, const Output& images, const Output& delta);

// The saturation of each pixel multiplied by `scale` (a float scalar) and
// clamped to [0, 1].
Output AdjustSaturation(const Scope& scope, const Output& images, const Output& scale);

// Each channel of each image (float32, rank 3 or more, any channel count)
// moved away from its mean over height and width: mean + factor * (x -
// mean), `contrast_factor` a float scalar (TF's AdjustContrastv2).
Output AdjustContrast(const Scope& scope, const Output& images, const Output& contrast_factor);

}  // namespace tw

#pragma GCC visibility pop

#endif  // TOWERFLOW_GRAPH_OPS_COLOR_OPS_H_
