# One command each: `make run` starts a node with embedded defaults, `make test` runs the suite.
VENV ?= .venv
PY := $(VENV)/bin/python

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,fast,dev,spark]'
	touch $@

.PHONY: venv run cluster test test-slow faults fuzz bench bench-cluster bench-federation bench-tls bench-containers bench-spark spark-example lint
venv: $(VENV)/.installed

run: venv
	$(VENV)/bin/leveret server

# Three local nodes (AMQP 5672-5674, management 15672-15674), stopped together with Ctrl-C.
cluster: venv
	$(VENV)/bin/leveret local-cluster

# The suite on pytest-xdist workers (conftest.py groups it): its tests mostly wait on the
# processes they start, so three workers finish it in 18-22 minutes on two cores where one took 31.
# TEST_WORKERS=0 runs it in this process.
TEST_WORKERS ?= 3
test: venv
	$(PY) -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadgroup

test-slow: venv
	LEVERET_SLOW=1 $(PY) -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadgroup

# Rounds of real faults (partitions between network namespaces, kills, pauses, power cuts) on
# a 3-node cluster, judged by a total-queue and a linearizability checker; needs root.
# LEVERET_SLOW=1 for the long run (100 rounds), LEVERET_FAULTS_SEED=N to replay one.
faults: venv
	$(PY) -m pytest -q -p no:cacheprovider -s tests/faults

# Coverage-guided fuzzing (Atheris, libFuzzer): ten million inputs through the connection
# parser (checked against pamqp), a million through whole connections on an in-process node.
fuzz: venv
	nice $(PY) -m tests.fuzz.run parser --runs 10000000 --max-len 1024 --artifacts fuzz-artifacts
	nice $(PY) -m tests.fuzz.run node --runs 1000000 --max-len 1024 --artifacts fuzz-artifacts

bench: venv
	$(PY) bench/side_by_side.py

# Cross-node messaging and durable declares on 3-node clusters, beside RabbitMQ's.
bench-cluster: venv
	$(PY) -m bench.cross_node --write
	$(PY) -m bench.cluster_bench --only declares --write

# Federated queues, Leveret → Leveret beside RabbitMQ → RabbitMQ with its federation plugin.
bench-federation: venv
	$(PY) -m bench.federation --write

# AMQP over TLS: Leveret's AMQPS beside its plain AMQP and RabbitMQ's AMQPS.
bench-tls: venv
	$(PY) -m bench.tls --write

LINTED := leveret cluster federation tests bench examples proto/metadata_schema.py

lint: venv
	$(VENV)/bin/ruff check $(LINTED)
	$(VENV)/bin/ruff format --check $(LINTED)
	$(VENV)/bin/mypy leveret cluster federation proto/metadata_schema.py

# Messages/s into and out of Spark: the connector beside pika inside foreachBatch on RabbitMQ.
bench-spark: venv
	$(PY) -m bench.spark --write

# Image size and startup, and the Helm chart's pods run on Docker (formation, rolling restart).
bench-containers: venv
	$(PY) -m bench.containers --write

# A Spark streaming pipeline (examples/spark_pipeline.py) run against a node it starts itself.
spark-example: venv
	$(PY) examples/spark_pipeline.py
