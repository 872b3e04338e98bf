/*
 * Gloo's all-reduce (Debian libgloo-dev), measured the way topoplace-coll-bench
 * measures topoplace (peer_common.h). One process per rank, started by the
 * caller:
 *
 *   peer_gloo --rank R --size N --store DIR [--addr IP] [--algo A] [common
 * options]
 *
 * --store: a FileStore directory shared by the ranks (empty, one per run);
 * --addr: the address the TCP device binds (default: this host name's address).
 * Algorithms: default           gloo::allreduce() with no algorithm set: what
 * torch's gloo backend runs for CPU tensors (a ring over unbound buffers)
 *   ring_chunked      gloo::AllreduceRingChunked
 *   halving_doubling  gloo::AllreduceHalvingDoubling
 *   bcube             gloo::allreduce() with the BCube algorithm
 */
#include <gloo/algorithm.h>
#include <gloo/allreduce.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>
#include <unistd.h>

#include <chrono>
#include <exception>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "peer_common.h"

namespace
{

using Clock = std::chrono::steady_clock;

double now()
{
	return std::chrono::duration<double>(Clock::now().time_since_epoch())
	    .count();
}

int count_hosts(gloo::rendezvous::Store &store, int rank, int size)
{
	char name[256] = {0};

	gethostname(name, sizeof(name) - 1);
	store.set("host/" + std::to_string(rank),
		  std::vector<char>(name, name + strlen(name)));
	std::set<std::string> hosts;
	for (int r = 0; r < size; r++) {
		std::vector<char> v = store.get("host/" + std::to_string(r));
		hosts.insert(std::string(v.begin(), v.end()));
	}
	return (int)hosts.size();
}

void barrier(const std::shared_ptr<gloo::Context> &ctx)
{
	gloo::BarrierOptions opts(ctx);
	gloo::barrier(opts);
}

/* The slowest rank's time per iteration, on every rank. */
void max_over_ranks(const std::shared_ptr<gloo::Context> &ctx,
		    std::vector<double> &t)
{
	gloo::AllreduceOptions opts(ctx);
	opts.setOutput(t.data(), t.size());
	opts.setReduceFunction(
	    static_cast<void (*)(void *, const void *, const void *, size_t)>(
		&gloo::max<double>));
	opts.setTag(1);
	gloo::allreduce(opts);
}

/* One all-reduce of buf[0..count) with the chosen algorithm, set up once per
 * size. */
class Runner
{
      public:
	Runner(const std::shared_ptr<gloo::Context> &ctx,
	       const std::string &algo, float *buf, size_t count)
	    : ctx_(ctx), algo_(algo), buf_(buf), count_(count)
	{
		std::vector<float *> ptrs{buf};

		if (algo == "ring_chunked")
			alg_.reset(new gloo::AllreduceRingChunked<float>(
			    ctx, ptrs, (int)count));
		else if (algo == "halving_doubling")
			alg_.reset(new gloo::AllreduceHalvingDoubling<float>(
			    ctx, ptrs, (int)count));
	}
	void run()
	{
		if (alg_) {
			alg_->run();
			return;
		}
		gloo::AllreduceOptions opts(ctx_);
		if (algo_ == "bcube")
			opts.setAlgorithm(
			    gloo::AllreduceOptions::Algorithm::BCUBE);
		opts.setOutput(buf_, count_);
		opts.setReduceFunction(
		    static_cast<void (*)(void *, const void *, const void *,
					 size_t)>(&gloo::sum<float>));
		opts.setTag(2);
		gloo::allreduce(opts);
	}

      private:
	std::shared_ptr<gloo::Context> ctx_;
	std::string algo_;
	float *buf_;
	size_t count_;
	std::unique_ptr<gloo::Algorithm> alg_;
};

int run_size(const std::shared_ptr<gloo::Context> &ctx, const peer_opts &o,
	     int hosts, size_t bytes, std::vector<float> &buf)
{
	size_t count = bytes / 4;
	int rank = ctx->rank, size = ctx->size;
	std::vector<double> t((size_t)o.iters);
	long wrong = 0;
	Runner runner(ctx, o.algo, buf.data(), count);

	for (int it = 0; it < o.warmup + o.iters; it++) {
		/* In place: refill outside the timed region so the check sees
		 * one sum. */
		if (it == 0 && o.check)
			for (size_t k = 0; k < count; k++)
				buf[k] = peer_value(rank, k);
		barrier(ctx);
		double t0 = now();
		runner.run();
		if (it >= o.warmup)
			t[(size_t)(it - o.warmup)] = now() - t0;
		if (it == 0 && o.check) {
			wrong = peer_check(buf.data(), count, size);
			memset(buf.data(), 0, bytes);
		}
	}
	max_over_ranks(ctx, t);
	if (o.check) {
		std::vector<double> w{(double)wrong};
		gloo::AllreduceOptions opts(ctx);
		opts.setOutput(w.data(), 1);
		opts.setReduceFunction(
		    static_cast<void (*)(void *, const void *, const void *,
					 size_t)>(&gloo::sum<double>));
		opts.setTag(3);
		gloo::allreduce(opts);
		wrong = (long)w[0];
	}
	if (rank == 0 && peer_report("gloo", &o, size, hosts, bytes,
				     peer_median(t.data(), o.iters), wrong))
		return 1;
	return wrong ? 1 : 0;
}

} // namespace

int main(int argc, char **argv)
{
	peer_opts o;
	int rc = 0;

	if (peer_parse(
		argc, argv, &o,
		"\n       --rank R --size N --store DIR [--addr IP]"
		" (Gloo: --algo default|ring_chunked|halving_doubling|bcube)"))
		return 2;
	std::string algo = o.algo;
	if (algo != "default" && algo != "ring_chunked" &&
	    algo != "halving_doubling" && algo != "bcube") {
		fprintf(stderr,
			"--algo: unknown Gloo all-reduce algorithm '%s'\n",
			o.algo);
		return 2;
	}
	if (o.rank < 0 || o.size < 1 || o.rank >= o.size || !o.store) {
		fprintf(stderr, "peer_gloo: --rank R --size N --store DIR are "
				"required (R < N)\n");
		return 2;
	}
	try {
		gloo::transport::tcp::attr attr;
		if (o.addr)
			attr.hostname = o.addr;
		else {
			char name[256] = {0};
			gethostname(name, sizeof(name) - 1);
			attr.hostname = name;
		}
		auto dev = gloo::transport::tcp::CreateDevice(attr);
		gloo::rendezvous::FileStore store(o.store);
		auto ctx =
		    std::make_shared<gloo::rendezvous::Context>(o.rank, o.size);
		ctx->setTimeout(
		    std::chrono::seconds(o.timeout > 0 ? o.timeout : 3600));
		ctx->connectFullMesh(store, dev);
		int hosts =
		    o.hosts ? o.hosts : count_hosts(store, o.rank, o.size);
		std::vector<float> buf(o.max_bytes / 4, 0.0f);

		if (o.rank == 0)
			peer_header("gloo", &o, o.size, hosts);
		for (size_t b = o.min_bytes & ~(size_t)3; b <= o.max_bytes;
		     b = peer_next_size(b, o.factor))
			rc |= run_size(ctx, o, hosts, b, buf);
		barrier(ctx);
	} catch (const std::exception &e) {
		fprintf(stderr, "peer_gloo: rank %d: %s\n", o.rank, e.what());
		return 1;
	}
	return rc;
}
