"""TF1's Python API over towerflow: ``import towerflow.compat.v1 as tf``.

A TF1 program of the kind towerflow is for (graphs, sessions, variable
scopes, towers on devices, queue input pipelines, optimizers, savers, scalar
summaries) runs with its import line changed. Every symbol here has TF1's
signature and semantics; a TF1 symbol towerflow lacks raises AttributeError
naming it (``tf.foo`` -> "towerflow.compat.v1 has no 'foo' ..."), and an
argument it cannot honour raises NotImplementedError naming the argument:
nothing is silently ignored.
"""

import sys as _sys
import types as _types

from ... import errors
from ..._tf1 import array_ops as _array
from ..._tf1 import dtypes as _dtypes
from ..._tf1 import framework as _fw
from ..._tf1 import graph_api as _api
from ..._tf1 import graph_ops as _graph_ops
from ..._tf1 import indexing as _indexing
from ..._tf1 import image as _image
from ..._tf1 import image_color as _image_color
from ..._tf1 import io as _io
from ..._tf1 import layers as _layers
from ..._tf1 import losses as _losses
from ..._tf1 import math_ops as _math
from ..._tf1 import metrics as _metrics
from ..._tf1 import monitored_session as _monitored
from ..._tf1 import moving_averages as _ema
from ..._tf1 import nn as _nn
from ..._tf1 import session as _session
from ..._tf1 import summary as _summary
from ..._tf1 import train as _train
from ..._tf1 import variables as _vars


class _Namespace(_types.ModuleType):
    """A submodule (tf.nn, tf.train, ...) whose missing names raise naming them."""

    def __init__(self, name, doc, **symbols):
        super().__init__(name, doc)
        self.__dict__.update(symbols)

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise AttributeError("%s has no '%s': towerflow does not support it" % (self.__name__, attr))


def __getattr__(attr):
    if attr.startswith("__"):
        raise AttributeError(attr)
    raise AttributeError("towerflow.compat.v1 has no '%s': towerflow does not support it" % attr)


# ---- dtypes
DType = _dtypes.DType
as_dtype = _dtypes.as_dtype
float32 = _dtypes.float32
float64 = _dtypes.float64
double = _dtypes.float64
int32 = _dtypes.int32
int64 = _dtypes.int64
uint8 = _dtypes.uint8
bool = _dtypes.bool  # noqa: A001
string = _dtypes.string
dtypes = _Namespace(__name__ + ".dtypes", "dtypes", DType=DType, as_dtype=as_dtype, float32=float32,
                    float64=float64, double=double, int32=int32, int64=int64, uint8=uint8, bool=bool,
                    string=string)

# ---- graphs, tensors, scopes
Graph = _fw.Graph
Operation = _fw.Operation
Tensor = _fw.Tensor
TensorShape = _fw.TensorShape
Dimension = _fw.Dimension
GraphKeys = _api.GraphKeys
get_default_graph = _fw.get_default_graph
reset_default_graph = _fw.reset_default_graph
get_default_session = _fw.get_default_session
name_scope = _api.name_scope
device = _api.device
control_dependencies = _api.control_dependencies
colocate_with = _api.colocate_with
convert_to_tensor = _fw.convert_to_tensor
constant = _fw.constant
set_random_seed = _api.set_random_seed
get_collection = _api.get_collection
get_collection_ref = _api.get_collection_ref
add_to_collection = _api.add_to_collection
add_to_collections = _api.add_to_collections

# ---- variables
Variable = _vars.VariableV1
VariableScope = _vars.VariableScope
AUTO_REUSE = _vars.AUTO_REUSE
get_variable = _vars.get_variable
get_variable_scope = _vars.get_variable_scope
variable_scope = _vars.variable_scope
global_variables = _vars.global_variables
trainable_variables = _vars.trainable_variables
local_variables = _vars.local_variables
moving_average_variables = _ema.moving_average_variables
global_variables_initializer = _vars.global_variables_initializer
initialize_all_variables = _vars.global_variables_initializer
local_variables_initializer = _vars.local_variables_initializer
variables_initializer = _vars.variables_initializer
assign = _vars.assign
assign_add = _vars.assign_add
assign_sub = _vars.assign_sub
zeros_initializer = _vars.zeros_initializer
ones_initializer = _vars.ones_initializer
constant_initializer = _vars.constant_initializer
random_normal_initializer = _vars.random_normal_initializer
truncated_normal_initializer = _vars.truncated_normal_initializer
random_uniform_initializer = _vars.random_uniform_initializer
glorot_uniform_initializer = _vars.glorot_uniform_initializer
initializers = _Namespace(__name__ + ".initializers", "initializers", zeros=zeros_initializer,
                          ones=ones_initializer, constant=constant_initializer,
                          random_normal=random_normal_initializer, truncated_normal=truncated_normal_initializer,
                          random_uniform=random_uniform_initializer, glorot_uniform=glorot_uniform_initializer,
                          global_variables=global_variables_initializer,
                          local_variables=local_variables_initializer, variables=variables_initializer)

# ---- array ops
placeholder = _array.placeholder
identity = _array.identity
stop_gradient = _array.stop_gradient
shape = _array.shape
rank = _array.rank
reshape = _array.reshape
cast = _array.cast
to_float = _array.to_float
to_double = _array.to_double
to_int32 = _array.to_int32
to_int64 = _array.to_int64
concat = _array.concat
stack = _array.stack
unstack = _array.unstack
expand_dims = _array.expand_dims
squeeze = _array.squeeze
slice = _array.slice  # noqa: A001
fill = _array.fill
zeros = _array.zeros
ones = _array.ones
zeros_like = _array.zeros_like
ones_like = _array.ones_like
broadcast_to = _array.broadcast_to
gather = _indexing.gather
unsorted_segment_sum = _indexing.unsorted_segment_sum
one_hot = _indexing.one_hot
where = _indexing.where
where_v2 = _indexing.where_v2
transpose = _indexing.transpose
invert_permutation = _indexing.invert_permutation
tile = _indexing.tile
pad = _indexing.pad
range = _indexing.range  # noqa: A001

# ---- math ops
add = _math.add
subtract = _math.subtract
multiply = _math.multiply
divide = _math.divide
truediv = _math.truediv
div = _math.div
maximum = _math.maximum
negative = _math.negative
square = _math.square
sqrt = _math.sqrt
exp = _math.exp
log = _math.log
log1p = _math.log1p
sigmoid = _math.sigmoid
tanh = _math.tanh
matmul = _math.matmul
add_n = _math.add_n
reduce_sum = _math.reduce_sum
reduce_mean = _math.reduce_mean
reduce_max = _math.reduce_max
argmax = _math.argmax
equal = _math.equal
greater_equal = _math.greater_equal
greater = _math.greater
less = _math.less
less_equal = _math.less_equal
not_equal = _math.not_equal
logical_not = _math.logical_not
minimum = _math.minimum
abs = _math.abs  # noqa: A001
pow = _math.pow  # noqa: A001
floordiv = _math.floordiv
rsqrt = _math.rsqrt
reciprocal = _math.reciprocal
squared_difference = _math.squared_difference
floor_div = _math.floor_div
floormod = _math.floormod
mod = _math.mod
reduce_min = _math.reduce_min
clip_by_value = _math.clip_by_value
clip_by_norm = _math.clip_by_norm
clip_by_global_norm = _math.clip_by_global_norm
global_norm = _math.global_norm
math = _Namespace(__name__ + ".math", "math", add=add, subtract=subtract, multiply=multiply, divide=divide,
                  maximum=maximum, negative=negative, square=square, sqrt=sqrt, exp=exp, log=log, log1p=log1p,
                  sigmoid=sigmoid, tanh=tanh, add_n=add_n, reduce_sum=reduce_sum, reduce_mean=reduce_mean,
                  reduce_max=reduce_max, argmax=argmax, equal=equal, greater_equal=greater_equal,
                  greater=greater, less=less, less_equal=less_equal, not_equal=not_equal,
                  logical_not=logical_not, minimum=minimum, abs=abs, pow=pow, reduce_min=reduce_min,
                  floordiv=floordiv, floormod=floormod, mod=mod, truediv=truediv, rsqrt=rsqrt,
                  reciprocal=reciprocal, squared_difference=squared_difference,
                  unsorted_segment_sum=unsorted_segment_sum, in_top_k=_indexing.in_top_k,
                  invert_permutation=invert_permutation)

linalg = _Namespace(__name__ + ".linalg", "tf.linalg", matmul=matmul)

# ---- gradients, control flow, random
gradients = _graph_ops.gradients
group = _graph_ops.group
no_op = _graph_ops.no_op
tuple = _graph_ops.tuple_  # noqa: A001
random_normal = _graph_ops.random_normal
truncated_normal = _graph_ops.truncated_normal
random_uniform = _graph_ops.random_uniform
random = _Namespace(__name__ + ".random", "random", normal=random_normal, truncated_normal=truncated_normal,
                    uniform=random_uniform, set_random_seed=set_random_seed)

# ---- nn
nn = _Namespace(__name__ + ".nn", "tf.nn", relu=_nn.relu, sigmoid=_nn.sigmoid, tanh=_nn.tanh,
                relu6=_nn.relu6, leaky_relu=_nn.leaky_relu, softplus=_nn.softplus, l2_normalize=_nn.l2_normalize,
                softmax=_nn.softmax, bias_add=_nn.bias_add, conv2d=_nn.conv2d, max_pool=_nn.max_pool,
                avg_pool=_nn.avg_pool, lrn=_nn.lrn, local_response_normalization=_nn.lrn,
                dropout=_nn.dropout, l2_loss=_nn.l2_loss, moments=_nn.moments,
                in_top_k=_indexing.in_top_k, embedding_lookup=_indexing.embedding_lookup,
                sigmoid_cross_entropy_with_logits=_nn.sigmoid_cross_entropy_with_logits,
                log_softmax=_nn.log_softmax, batch_normalization=_nn.batch_normalization,
                softmax_cross_entropy_with_logits=_nn.softmax_cross_entropy_with_logits,
                softmax_cross_entropy_with_logits_v2=_nn.softmax_cross_entropy_with_logits_v2,
                sparse_softmax_cross_entropy_with_logits=_nn.sparse_softmax_cross_entropy_with_logits)

# ---- layers (TF1's tf.layers: the functions and the layer classes)
layers = _Namespace(__name__ + ".layers", "tf.layers", dense=_layers.dense, conv2d=_layers.conv2d,
                    max_pooling2d=_layers.max_pooling2d, average_pooling2d=_layers.average_pooling2d,
                    flatten=_layers.flatten, dropout=_layers.dropout,
                    batch_normalization=_layers.batch_normalization, Layer=_layers.Layer, Dense=_layers.Dense,
                    Conv2D=_layers.Conv2D, MaxPooling2D=_layers.MaxPooling2D,
                    AveragePooling2D=_layers.AveragePooling2D, Flatten=_layers.Flatten,
                    Dropout=_layers.Dropout, BatchNormalization=_layers.BatchNormalization)

# ---- losses and metrics
losses = _Namespace(__name__ + ".losses", "tf.losses", Reduction=_losses.Reduction,
                    compute_weighted_loss=_losses.compute_weighted_loss,
                    sparse_softmax_cross_entropy=_losses.sparse_softmax_cross_entropy,
                    softmax_cross_entropy=_losses.softmax_cross_entropy,
                    sigmoid_cross_entropy=_losses.sigmoid_cross_entropy,
                    mean_squared_error=_losses.mean_squared_error,
                    absolute_difference=_losses.absolute_difference, huber_loss=_losses.huber_loss,
                    log_loss=_losses.log_loss, add_loss=_losses.add_loss, get_losses=_losses.get_losses,
                    get_regularization_losses=_losses.get_regularization_losses,
                    get_regularization_loss=_losses.get_regularization_loss,
                    get_total_loss=_losses.get_total_loss)
metrics = _Namespace(__name__ + ".metrics", "tf.metrics", accuracy=_metrics.accuracy, mean=_metrics.mean)

# ---- sessions
Session = _session.Session
InteractiveSession = _session.InteractiveSession
ConfigProto = _session.ConfigProto
GPUOptions = _session.GPUOptions
RunOptions = _session.RunOptions
RunMetadata = _session.RunMetadata

# ---- input
FixedLenFeature = _io.FixedLenFeature
VarLenFeature = _io.VarLenFeature
SparseTensor = _io.SparseTensor
SparseTensorValue = _io.SparseTensorValue
parse_single_example = _io.parse_single_example
parse_example = _io.parse_example
decode_raw = _io.decode_raw
TFRecordReader = _io.TFRecordReader
io = _Namespace(__name__ + ".io", "tf.io", FixedLenFeature=FixedLenFeature, VarLenFeature=VarLenFeature,
                parse_single_example=parse_single_example, parse_example=parse_example, decode_raw=decode_raw,
                TFRecordOptions=_io.TFRecordOptions, TFRecordWriter=_io.TFRecordWriter,
                tf_record_iterator=_io.tf_record_iterator, decode_jpeg=_image.decode_jpeg,
                decode_png=_image.decode_png, decode_image=_image.decode_image, encode_jpeg=_image.encode_jpeg,
                encode_png=_image.encode_png)

# ---- images (tf.image), tf.random_crop, tf.reverse
image = _Namespace(__name__ + ".image", "tf.image", decode_jpeg=_image.decode_jpeg, decode_png=_image.decode_png,
                   decode_image=_image.decode_image, encode_jpeg=_image.encode_jpeg, encode_png=_image.encode_png,
                   convert_image_dtype=_image.convert_image_dtype, ResizeMethod=_image.ResizeMethod,
                   resize_images=_image.resize_images, resize=_image.resize, resize_bilinear=_image.resize_bilinear,
                   resize_nearest_neighbor=_image.resize_nearest_neighbor, resize_bicubic=_image.resize_bicubic,
                   resize_area=_image.resize_area, flip_left_right=_image.flip_left_right,
                   flip_up_down=_image.flip_up_down, random_flip_left_right=_image.random_flip_left_right,
                   random_flip_up_down=_image.random_flip_up_down, transpose_image=_image.transpose_image,
                   transpose=_image.transpose_image, rot90=_image.rot90,
                   crop_to_bounding_box=_image.crop_to_bounding_box, pad_to_bounding_box=_image.pad_to_bounding_box,
                   resize_image_with_crop_or_pad=_image.resize_image_with_crop_or_pad,
                   resize_with_crop_or_pad=_image.resize_with_crop_or_pad, central_crop=_image.central_crop,
                   random_crop=_image.random_crop, adjust_brightness=_image.adjust_brightness,
                   random_brightness=_image.random_brightness, adjust_contrast=_image.adjust_contrast,
                   random_contrast=_image.random_contrast, per_image_standardization=_image.per_image_standardization,
                   rgb_to_grayscale=_image.rgb_to_grayscale, grayscale_to_rgb=_image.grayscale_to_rgb,
                   sample_distorted_bounding_box=_image.sample_distorted_bounding_box,
                   rgb_to_hsv=_image_color.rgb_to_hsv, hsv_to_rgb=_image_color.hsv_to_rgb,
                   adjust_hue=_image_color.adjust_hue, random_hue=_image_color.random_hue,
                   adjust_saturation=_image_color.adjust_saturation, random_saturation=_image_color.random_saturation)
random_crop = _image.random_crop
reverse = _image.reverse
reverse_v2 = _image.reverse
python_io = _Namespace(__name__ + ".python_io", "tf.python_io", TFRecordOptions=_io.TFRecordOptions,
                       TFRecordWriter=_io.TFRecordWriter, tf_record_iterator=_io.tf_record_iterator,
                       TFRecordCompressionType=_io.TFRecordCompressionType)

# ---- script plumbing: flags, a main, log lines, files
from ..._tf1 import platform as _platform  # noqa: E402

flags = _Namespace(__name__ + ".flags", "tf.flags", FLAGS=_platform.FLAGS, DEFINE_string=_platform.DEFINE_string,
                   DEFINE_integer=_platform.DEFINE_integer, DEFINE_float=_platform.DEFINE_float,
                   DEFINE_boolean=_platform.DEFINE_boolean, DEFINE_bool=_platform.DEFINE_bool,
                   DEFINE_list=_platform.DEFINE_list)
app = _Namespace(__name__ + ".app", "tf.app", run=_platform.run, flags=flags)
logging = _Namespace(__name__ + ".logging", "tf.logging", DEBUG=_platform.DEBUG, INFO=_platform.INFO,
                     WARN=_platform.WARN, ERROR=_platform.ERROR, FATAL=_platform.FATAL,
                     set_verbosity=_platform.set_verbosity, get_verbosity=_platform.get_verbosity,
                     debug=_platform.debug, info=_platform.info, warning=_platform.warning, warn=_platform.warn,
                     error=_platform.error, fatal=_platform.fatal, log_every_n=_platform.log_every_n,
                     log_first_n=_platform.log_first_n)
gfile = _Namespace(__name__ + ".gfile", "tf.gfile", GFile=_platform.GFile, Open=_platform.Open,
                   FastGFile=_platform.FastGFile, Exists=_platform.Exists, IsDirectory=_platform.IsDirectory,
                   ListDirectory=_platform.ListDirectory, Glob=_platform.Glob, MakeDirs=_platform.MakeDirs,
                   MkDir=_platform.MkDir, Remove=_platform.Remove, DeleteRecursively=_platform.DeleteRecursively,
                   Rename=_platform.Rename, Copy=_platform.Copy, Walk=_platform.Walk, Stat=_platform.Stat)

# ---- training
train = _Namespace(
    __name__ + ".train", "tf.train",
    Optimizer=_train.Optimizer,
    GradientDescentOptimizer=_train.GradientDescentOptimizer,
    MomentumOptimizer=_train.MomentumOptimizer,
    AdamOptimizer=_train.AdamOptimizer,
    RMSPropOptimizer=_train.RMSPropOptimizer,
    AdagradOptimizer=_train.AdagradOptimizer,
    ExponentialMovingAverage=_ema.ExponentialMovingAverage,
    get_or_create_global_step=_train.get_or_create_global_step,
    get_global_step=_train.get_global_step,
    create_global_step=_train.create_global_step,
    Saver=_train.Saver,
    latest_checkpoint=_train.latest_checkpoint,
    get_checkpoint_state=_train.get_checkpoint_state,
    exponential_decay=_train.exponential_decay,
    piecewise_constant=_train.piecewise_constant,
    Coordinator=_train.Coordinator,
    start_queue_runners=_train.start_queue_runners,
    string_input_producer=_train.string_input_producer,
    batch=_train.batch,
    batch_join=_train.batch_join,
    shuffle_batch=_train.shuffle_batch,
    shuffle_batch_join=_train.shuffle_batch_join,
    MonitoredTrainingSession=_monitored.MonitoredTrainingSession,
    MonitoredSession=_monitored.MonitoredSession,
    SingularMonitoredSession=_monitored.SingularMonitoredSession,
    SessionCreator=_monitored.SessionCreator,
    ChiefSessionCreator=_monitored.ChiefSessionCreator,
    Scaffold=_monitored.Scaffold,
    SessionRunHook=_monitored.SessionRunHook,
    SessionRunArgs=_monitored.SessionRunArgs,
    SessionRunContext=_monitored.SessionRunContext,
    SessionRunValues=_monitored.SessionRunValues,
    StopAtStepHook=_monitored.StopAtStepHook,
    NanTensorHook=_monitored.NanTensorHook,
    NanLossDuringTrainingError=_monitored.NanLossDuringTrainingError,
    LoggingTensorHook=_monitored.LoggingTensorHook,
    CheckpointSaverHook=_monitored.CheckpointSaverHook,
    CheckpointSaverListener=_monitored.CheckpointSaverListener,
    SummarySaverHook=_monitored.SummarySaverHook,
    StepCounterHook=_monitored.StepCounterHook,
)

# ---- summaries
summary = _Namespace(__name__ + ".summary", "tf.summary", scalar=_summary.scalar, histogram=_summary.histogram,
                     merge=_summary.merge,
                     merge_all=_summary.merge_all, FileWriter=_summary.FileWriter)

# ---- datasets (TF 1.4's tf.data): towerflow.data's Dataset
from ... import data as _data  # noqa: E402

data = _Namespace(__name__ + ".data", "tf.data", Dataset=_data.Dataset, TFRecordDataset=_data.TFRecordDataset,
                  Iterator=_data.Iterator, make_one_shot_iterator=lambda ds: ds.make_one_shot_iterator(),
                  make_initializable_iterator=lambda ds, shared_name=None: ds.make_initializable_iterator(
                      shared_name),
                  experimental=_Namespace(__name__ + ".data.experimental", "tf.data.experimental",
                                          AUTOTUNE=_data.AUTOTUNE, ignore_errors=_data.ignore_errors))

# ---- errors
errors = errors

for _name, _mod in list(globals().items()):
    if isinstance(_mod, _Namespace):
        _sys.modules[_mod.__name__] = _mod
del _name, _mod
