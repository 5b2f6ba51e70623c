# gpu-cost-bot: `docker build -t gpu-cost-bot:0.1.0 .`, then README.md, "Install in a cluster".

# The wheel is built in its own stage, so the image holds the installed package, not the sources
# or the build tools.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY actions/ actions/
COPY bot/ bot/
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM python:3.11-slim
# The root filesystem is read-only in the cluster (deploy/base/deployment.yaml) and the user has
# no home: matplotlib (the digest charts) keeps its font cache on the /tmp volume instead.
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    MPLCONFIGDIR=/tmp/matplotlib
# A fixed numeric uid, so the kubelet can check runAsNonRoot (deploy/base/deployment.yaml uses it).
RUN groupadd --system --gid 10001 bot \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin bot
COPY --from=build /wheels /wheels
# Every dependency at the version the tests last passed with (constraints.txt), not whatever is
# newest on the day of the build.
COPY constraints.txt /constraints.txt
# The postgres extra: the ha overlay keeps its state in PostgreSQL.
RUN whl="$(ls /wheels/gpu_cost_bot-*.whl)" \
 && pip install -c /constraints.txt "${whl}[postgres]" \
 && rm -rf /wheels \
 && install -d -o 10001 -g 10001 /var/lib/gpu-cost-bot
USER 10001:10001
# SQLite's directory (the single overlay mounts its volume here).
WORKDIR /var/lib/gpu-cost-bot
# Probes and /metrics; Slack's /slack/events in HTTP mode.
EXPOSE 8080 3000
# `docker run IMAGE` runs the bot; `docker run IMAGE check --config ...` any other command.
ENTRYPOINT ["gpu-cost-bot"]
CMD ["run"]
