// The MMD curve weight: the cubic Bézier (0,0) (x1,y1) (x2,y2) (1,1) solved for x(t) = x by 64 halvings of
// [0, 1] (x(t) rises with t for control points in [0, 1]), then y(t). Same signature as babylon-mmd's
// BezierInterpolate(x1, x2, y1, y2, x), see tests/js/exact_bezier_hook.mjs.
const coordinate = (p1, p2, t) => {
  const s = 1 - t;
  return 3 * s * s * t * p1 + 3 * s * t * t * p2 + t * t * t;
};

export function BezierInterpolate(x1, x2, y1, y2, x) {
  let lo = 0;
  let hi = 1;
  for (let i = 0; i < 64; i++) {
    const mid = 0.5 * (lo + hi);
    if (coordinate(x1, x2, mid) < x) lo = mid;
    else hi = mid;
  }
  return coordinate(y1, y2, 0.5 * (lo + hi));
}
