#include "pinocchio_side.h"

#include <chrono>
#include <fstream>

#include "pinocchio/algorithm/aba.hpp"
#include "pinocchio/algorithm/crba.hpp"
#include "pinocchio/algorithm/frames.hpp"
#include "pinocchio/algorithm/jacobian.hpp"
#include "pinocchio/algorithm/rnea.hpp"
#include "pinocchio/multibody.hpp"

namespace pinocchio_side {

using pinocchio::SE3;

struct Bench {
  pinocchio::Model model;
  pinocchio::Data data;
  pinocchio::FrameIndex frame = 0;
  std::vector<Eigen::VectorXd> q, v, a, tau;
  Eigen::Matrix<double, 6, Eigen::Dynamic> jacobian;
  double sink = 0.0;
};

namespace {

SE3 read_placement(std::istream &in) {
  Eigen::Matrix3d rotation;
  Eigen::Vector3d translation;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) in >> rotation(i, j);
  in >> translation[0] >> translation[1] >> translation[2];
  return SE3(rotation, translation);
}

// The joint types the URDF parser builds for revolute, continuous and prismatic joints.
bool make_joint(const std::string &type, const Eigen::Vector3d &axis,
                pinocchio::JointModel &joint) {
  using namespace pinocchio;
  if (type == "JointModelRX") joint = JointModelRX();
  else if (type == "JointModelRY") joint = JointModelRY();
  else if (type == "JointModelRZ") joint = JointModelRZ();
  else if (type == "JointModelRUBX") joint = JointModelRUBX();
  else if (type == "JointModelRUBY") joint = JointModelRUBY();
  else if (type == "JointModelRUBZ") joint = JointModelRUBZ();
  else if (type == "JointModelPX") joint = JointModelPX();
  else if (type == "JointModelPY") joint = JointModelPY();
  else if (type == "JointModelPZ") joint = JointModelPZ();
  else if (type == "JointModelRevoluteUnaligned") joint = JointModelRevoluteUnaligned(axis);
  else if (type == "JointModelRevoluteUnboundedUnaligned")
    joint = JointModelRevoluteUnboundedUnaligned(axis);
  else if (type == "JointModelPrismaticUnaligned") joint = JointModelPrismaticUnaligned(axis);
  else return false;
  return true;
}

}  // namespace

Bench *load(const std::string &path, std::string &error) {
  std::ifstream in(path);
  int joints = 0;
  if (!(in >> joints) || joints < 1 || joints > 1000) {
    error = "no joint count";
    return nullptr;
  }
  Bench *bench = new Bench;
  pinocchio::Model &model = bench->model;
  for (int k = 0; k < joints; ++k) {
    std::string name, type;
    int parent = -1;
    Eigen::Vector3d axis;
    in >> name >> type >> parent >> axis[0] >> axis[1] >> axis[2];
    SE3 placement = read_placement(in);
    double mass = 0.0;
    Eigen::Vector3d com;
    Eigen::Matrix3d rotational;
    in >> mass >> com[0] >> com[1] >> com[2];
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) in >> rotational(i, j);
    pinocchio::JointModel joint;
    if (!in || parent < 0 || parent > k || !make_joint(type, axis, joint)) {
      error = "joint " + std::to_string(k + 1) + " (" + type.substr(0, 60) + ") does not parse";
      delete bench;
      return nullptr;
    }
    pinocchio::JointIndex id = model.addJoint(parent, joint, placement, name);
    model.appendBodyToJoint(id, pinocchio::Inertia(mass, com, rotational));
  }
  std::string frame_name;
  int frame_parent = -1;
  in >> frame_name >> frame_parent;
  SE3 frame_placement = read_placement(in);
  Eigen::Vector3d gravity;
  in >> gravity[0] >> gravity[1] >> gravity[2];
  if (!in || frame_parent < 0 || frame_parent > joints) {
    error = "frame or gravity does not parse";
    delete bench;
    return nullptr;
  }
  bench->frame = model.addFrame(pinocchio::Frame(frame_name, frame_parent, frame_placement,
                                                 pinocchio::BODY));
  model.gravity.linear(gravity);
  bench->data = pinocchio::Data(model);
  bench->jacobian = Eigen::Matrix<double, 6, Eigen::Dynamic>::Zero(6, model.nv);
  return bench;
}

void release(Bench *bench) { delete bench; }
int nq(const Bench *bench) { return bench->model.nq; }
int nv(const Bench *bench) { return bench->model.nv; }

void set_states(Bench *bench, const std::vector<double> &q, const std::vector<double> &v,
                const std::vector<double> &a, const std::vector<double> &tau, int count) {
  const int n = bench->model.nv, m = bench->model.nq;
  bench->q.clear(), bench->v.clear(), bench->a.clear(), bench->tau.clear();
  for (int s = 0; s < count; ++s) {
    bench->q.push_back(Eigen::Map<const Eigen::VectorXd>(q.data() + s * m, m));
    bench->v.push_back(Eigen::Map<const Eigen::VectorXd>(v.data() + s * n, n));
    bench->a.push_back(Eigen::Map<const Eigen::VectorXd>(a.data() + s * n, n));
    bench->tau.push_back(Eigen::Map<const Eigen::VectorXd>(tau.data() + s * n, n));
  }
}

static void call(Bench *b, Function function, int s) {
  switch (function) {
    case GRAVITY:
      pinocchio::computeGeneralizedGravity(b->model, b->data, b->q[s]);
      break;
    case INVERSE_DYNAMICS:
      pinocchio::rnea(b->model, b->data, b->q[s], b->v[s], b->a[s]);
      break;
    case MASS_MATRIX:
      pinocchio::crba(b->model, b->data, b->q[s]);
      break;
    case FORWARD_DYNAMICS:
      pinocchio::aba(b->model, b->data, b->q[s], b->v[s], b->tau[s]);
      break;
    case JACOBIAN:
      pinocchio::computeFrameJacobian(b->model, b->data, b->q[s], b->frame,
                                      pinocchio::LOCAL_WORLD_ALIGNED, b->jacobian);
      break;
    default:
      break;
  }
}

void answer(Bench *b, Function function, int s, std::vector<double> &out) {
  call(b, function, s);
  const int n = b->model.nv;
  out.clear();
  if (function == MASS_MATRIX) {
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) out.push_back(b->data.M(std::min(i, j), std::max(i, j)));
  } else if (function == JACOBIAN) {
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < n; ++j) out.push_back(b->jacobian(i, j));
  } else {
    const Eigen::VectorXd &answer = function == GRAVITY ? b->data.g
                                    : function == FORWARD_DYNAMICS ? b->data.ddq : b->data.tau;
    out.assign(answer.data(), answer.data() + n);
  }
}

double time_per_call(Bench *b, Function function) {
  const int count = static_cast<int>(b->q.size());
  const auto start = std::chrono::steady_clock::now();
  for (int s = 0; s < count; ++s) call(b, function, s);
  const auto stop = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(stop - start).count() / count;
}

}  // namespace pinocchio_side
