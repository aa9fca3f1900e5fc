// CPU kernel of SampleDistortedBoundingBox and SampleDistortedBoundingBoxV2
// (the random crop of Inception-style preprocessing), TF's algorithm: up to
// max_attempts times, draw an aspect ratio in aspect_ratio_range, a height
// whose area lies in area_range of the image's (rounded as TF rounds, then
// nudged by one row if rounding left the range), and an offset; keep the
// first crop that covers at least min_object_covered of one of the boxes.
// When none does, the whole image. Boxes are [y_min, x_min, y_max, x_max]
// fractions of the image, truncated to whole pixels. The draws come from the
// kernel's own seeded stream (internal/random_generator.h): a seed gives a
// repeatable sequence, not TF's numbers. Sizes are held in 64 bits, so no
// image size or ratio overflows where TF's int arithmetic could.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <mutex>
#include <vector>

#include "towerflow/kernels/internal/random_generator.h"
#include "towerflow/kernels/register_all.h"

namespace tw {
namespace {

struct Rect {
  int64_t min_x = 0, min_y = 0, max_x = 0, max_y = 0;

  float Area() const { return static_cast<float>((max_x - min_x) * (max_y - min_y)); }
  Rect Intersect(const Rect& r) const {
    Rect i{std::max(min_x, r.min_x), std::max(min_y, r.min_y), std::min(max_x, r.max_x), std::min(max_y, r.max_y)};
    return i.min_x > i.max_x || i.min_y > i.max_y ? Rect{} : i;
  }
};

// lrintf of v, held within [-2^31, 2^31] (beyond any image side, so that a
// width times a height stays within 64 bits).
int64_t Round(float v) {
  constexpr float kLimit = 0x1.0p31f;
  if (!(v < kLimit)) return v > 0 ? static_cast<int64_t>(kLimit) : 0;
  return v > -kLimit ? std::llrint(v) : -static_cast<int64_t>(kLimit);
}

// A crop of `aspect_ratio` (width / height) whose area is within
// [min_area, max_area] of the image's, at a random offset; false when the
// constraints cannot be met.
bool RandomCrop(int64_t width, int64_t height, float min_relative, float max_relative, float aspect_ratio,
                RandomGenerator& gen, Rect* crop) {
  if (max_relative <= 0 || aspect_ratio <= 0 || width <= 0 || height <= 0 || min_relative > max_relative) {
    return false;
  }
  const float min_area = min_relative * static_cast<float>(width) * static_cast<float>(height);
  const float max_area = max_relative * static_cast<float>(width) * static_cast<float>(height);
  int64_t h = Round(std::sqrt(min_area / aspect_ratio));
  int64_t max_h = Round(std::sqrt(max_area / aspect_ratio));
  if (Round(static_cast<float>(max_h) * aspect_ratio) > width) {
    // The largest height whose rounded width fits.
    constexpr float kEps = 0.0000001f;
    max_h = static_cast<int64_t>((static_cast<double>(width) + 0.5 - kEps) / aspect_ratio);
    if (Round(static_cast<float>(max_h) * aspect_ratio) > width) max_h -= 1;
  }
  max_h = std::min(max_h, height);
  h = std::min(h, max_h);
  if (h < max_h) h += static_cast<int64_t>(gen.UniformInt(static_cast<uint64_t>(max_h - h + 1)));
  int64_t w = Round(static_cast<float>(h) * aspect_ratio);
  float area = static_cast<float>(w * h);
  // Rounding may leave the area just outside the range: one row more, then
  // one row less, before giving up.
  if (area < min_area) {
    h += 1;
    w = Round(static_cast<float>(h) * aspect_ratio);
    area = static_cast<float>(w * h);
  }
  if (area > max_area) {
    h -= 1;
    w = Round(static_cast<float>(h) * aspect_ratio);
    area = static_cast<float>(w * h);
  }
  if (area < min_area || area > max_area || w > width || h > height || w <= 0 || h <= 0) return false;
  const int64_t y = h < height ? static_cast<int64_t>(gen.UniformInt(static_cast<uint64_t>(height - h))) : 0;
  const int64_t x = w < width ? static_cast<int64_t>(gen.UniformInt(static_cast<uint64_t>(width - w))) : 0;
  *crop = Rect{x, y, x + w, y + h};
  return true;
}

// Whether `crop` holds at least `min_covered` of one non-empty box.
bool CoversAnObject(const Rect& crop, float min_covered, const std::vector<Rect>& boxes) {
  if (crop.Area() < 1) return false;
  for (const Rect& box : boxes) {
    if (box.Area() < 1) continue;
    if (crop.Intersect(box).Area() / box.Area() >= min_covered) return true;
  }
  return false;
}

// Inputs: image_size (T [3]), bounding_boxes (float [batch, N, 4]) and, for
// V2, min_object_covered (float scalar). Outputs: begin, size (T [3]), bboxes
// (float [1, 1, 4]).
template <typename T>
class SampleDistortedBoundingBoxOp : public OpKernel {
 public:
  explicit SampleDistortedBoundingBoxOp(OpKernelConstruction* c) : OpKernel(c), gen_(Attr(c, "seed"), Attr(c, "seed2")) {
    const char* op = c->node().op().c_str();
    v2_ = c->node().op() == "SampleDistortedBoundingBoxV2";
    TW_OP_REQUIRES_OK(c, c->GetAttr("aspect_ratio_range", &aspect_ratio_range_));
    TW_OP_REQUIRES(c, aspect_ratio_range_.size() == 2,
                   errors::InvalidArgument(op, ": aspect_ratio_range must have 2 elements, got ",
                                           aspect_ratio_range_.size()));
    TW_OP_REQUIRES(c, aspect_ratio_range_[0] > 0 && aspect_ratio_range_[1] > 0,
                   errors::InvalidArgument(op, ": aspect_ratio_range must be positive, got [", aspect_ratio_range_[0],
                                           ", ", aspect_ratio_range_[1], "]"));
    TW_OP_REQUIRES_OK(c, c->GetAttr("area_range", &area_range_));
    TW_OP_REQUIRES(c, area_range_.size() == 2,
                   errors::InvalidArgument(op, ": area_range must have 2 elements, got ", area_range_.size()));
    TW_OP_REQUIRES(c, area_range_[0] > 0 && area_range_[1] > 0 && area_range_[0] <= 1 && area_range_[1] <= 1,
                   errors::InvalidArgument(op, ": area_range must be in (0, 1], got [", area_range_[0], ", ",
                                           area_range_[1], "]"));
    TW_OP_REQUIRES_OK(c, c->GetAttr("max_attempts", &max_attempts_));
    // TF reads it as an int: at most 2^31 - 1 attempts (each a few draws).
    TW_OP_REQUIRES(c, max_attempts_ > 0 && max_attempts_ <= std::numeric_limits<int32_t>::max(),
                   errors::InvalidArgument(op, ": max_attempts must be in [1, 2^31), got ", max_attempts_));
    TW_OP_REQUIRES_OK(c, c->GetAttr("use_image_if_no_bounding_boxes", &use_image_));
    if (!v2_) {
      TW_OP_REQUIRES_OK(c, c->GetAttr("min_object_covered", &min_object_covered_));
      TW_OP_REQUIRES(c, min_object_covered_ >= 0,
                     errors::InvalidArgument(op, ": min_object_covered must be non-negative, got ",
                                             min_object_covered_));
    }
  }

  void Compute(OpKernelContext* ctx) override {
    const char* op = v2_ ? "SampleDistortedBoundingBoxV2" : "SampleDistortedBoundingBox";
    const Tensor& image_size = ctx->input(0);
    TW_OP_REQUIRES(ctx, image_size.rank() == 1 && image_size.dim(0) == 3,
                   errors::InvalidArgument(op, ": image_size must be a vector of 3 elements [height, width, "
                                           "channels], got shape ", image_size.shape().ToString()));
    const auto height = static_cast<int64_t>(image_size.data<T>()[0]);
    const auto width = static_cast<int64_t>(image_size.data<T>()[1]);
    constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
    TW_OP_REQUIRES(ctx, height >= 0 && height < kMax && width >= 0 && width < kMax,
                   errors::InvalidArgument(op, ": image height and width must be in [0, 2^31 - 1), got ", height,
                                           " and ", width));
    float min_covered = min_object_covered_;
    if (v2_) {
      const Tensor& m = ctx->input(2);
      TW_OP_REQUIRES(ctx, m.rank() == 0, errors::InvalidArgument(op, ": min_object_covered must be a scalar, got shape ",
                                                                 m.shape().ToString()));
      min_covered = m.data<float>()[0];
      TW_OP_REQUIRES(ctx, min_covered >= 0,
                     errors::InvalidArgument(op, ": min_object_covered must be non-negative, got ", min_covered));
    }
    std::vector<Rect> boxes;
    TW_OP_REQUIRES_OK(ctx, Boxes(ctx->input(1), op, width, height, &boxes));
    const Rect image{0, 0, width, height};
    if (boxes.empty()) {
      TW_OP_REQUIRES(ctx, use_image_,
                     errors::InvalidArgument(op, ": no bounding boxes given; set use_image_if_no_bounding_boxes "
                                                 "to use the whole image instead"));
      boxes.push_back(image);
    }
    Rect crop = image;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int64_t i = 0; i < max_attempts_; ++i) {
        const float aspect = gen_.Uniform<float>() * (aspect_ratio_range_[1] - aspect_ratio_range_[0]) +
                             aspect_ratio_range_[0];
        Rect candidate;
        if (RandomCrop(width, height, area_range_[0], area_range_[1], aspect, gen_, &candidate) &&
            CoversAnObject(candidate, min_covered, boxes)) {
          crop = candidate;
          break;
        }
      }
    }
    Tensor *begin = nullptr, *size = nullptr, *bboxes = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({3}), &begin));
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({3}), &size));
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(2, TensorShape({1, 1, 4}), &bboxes));
    T* b = begin->data<T>();
    T* s = size->data<T>();
    b[0] = static_cast<T>(crop.min_y), b[1] = static_cast<T>(crop.min_x), b[2] = static_cast<T>(0);
    s[0] = static_cast<T>(crop.max_y - crop.min_y), s[1] = static_cast<T>(crop.max_x - crop.min_x);
    s[2] = static_cast<T>(-1);  // every channel (255 for uint8, as TF)
    float* f = bboxes->data<float>();
    const auto h = static_cast<float>(height), w = static_cast<float>(width);
    f[0] = static_cast<float>(crop.min_y) / h, f[1] = static_cast<float>(crop.min_x) / w;
    f[2] = static_cast<float>(crop.max_y) / h, f[3] = static_cast<float>(crop.max_x) / w;
  }

 private:
  static int64_t Attr(OpKernelConstruction* c, const char* name) {
    int64_t v = 0;
    Status s = c->GetAttr(name, &v);
    if (!s.ok()) c->SetStatus(s);
    return v;
  }

  // The boxes in pixels (each coordinate in [0, 1], truncated as TF's).
  static Status Boxes(const Tensor& t, const char* op, int64_t width, int64_t height, std::vector<Rect>* out) {
    if (t.rank() != 3 || t.dim(2) != 4) {
      return errors::InvalidArgument(op, ": bounding_boxes must be 3-dimensional [batch, num_boxes, 4], got shape ",
                                     t.shape().ToString());
    }
    const float* v = t.data<float>();
    for (int64_t i = 0; i < t.NumElements() / 4; ++i) {
      const float* box = v + i * 4;
      for (int k = 0; k < 4; ++k) {
        if (!(box[k] >= 0 && box[k] <= 1)) {
          return errors::InvalidArgument(op, ": all bounding box coordinates must be in [0.0, 1.0], box ", i,
                                         " has ", box[k]);
        }
      }
      const auto at = [](float f, int64_t side) { return static_cast<int64_t>(f * static_cast<float>(side)); };
      out->push_back(Rect{at(box[1], width), at(box[0], height), at(box[3], width), at(box[2], height)});
    }
    return Status::OK();
  }

  bool v2_ = false;
  std::vector<float> aspect_ratio_range_, area_range_;
  int64_t max_attempts_ = 100;
  bool use_image_ = false;
  float min_object_covered_ = 0.1f;
  std::mutex mu_;
  RandomGenerator gen_;  // guarded by mu_
};

}  // namespace

void RegisterBoundingBoxKernels(KernelRegistry& r) {
  for (const char* op : {"SampleDistortedBoundingBox", "SampleDistortedBoundingBoxV2"}) {
    r.RegisterTyped<SampleDistortedBoundingBoxOp, int32_t, int64_t, uint8_t>(op, kDeviceCpu);
  }
}

}  // namespace tw
