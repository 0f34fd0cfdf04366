package io.sumi.faults.driver;

import io.sumi.testing.KafkaBrokerProcess;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * The Kafka mode's broker: a real broker as a JVM of its own ({@link KafkaBrokerProcess}), so that
 * it can be killed with SIGKILL and started again on the same ports and data.
 */
final class KafkaBroker implements Broker {

    private static final Duration READY = Duration.ofSeconds(90);

    private final KafkaBrokerProcess process;
    private final String topic;
    private final int partitions;

    KafkaBroker(Path dir, String classpath, String topic, int partitions) {
        // A small, quickly started JVM beside the application instances; started again if it
        // exits while the driver waits (a killed predecessor's port still held).
        this.process = new KafkaBrokerProcess(
                dir, classpath, "448m", List.of("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"), true);
        this.topic = topic;
        this.partitions = partitions;
    }

    @Override
    public void initAndStart() {
        process.formatAndStart(READY);
        process.createTopic(topic, partitions);
    }

    @Override
    public void crash() {
        process.kill9();
        process.start();
        process.awaitReady(READY);
    }

    @Override
    public void restart() {
        throw new UnsupportedOperationException("The Kafka mode crashes its broker; it has no graceful restart");
    }

    @Override
    public String address() {
        return process.bootstrapServers();
    }

    @Override
    public List<String> appArguments() {
        return List.of(
                "--spring.kafka.bootstrap-servers=" + process.bootstrapServers(),
                // The RabbitMQ mode's client stays off: no connection to anyone's RabbitMQ.
                "--spring.autoconfigure.exclude=org.springframework.boot.amqp.autoconfigure.RabbitAutoConfiguration");
    }

    @Override
    public void start() {
        process.start();
    }

    @Override
    public boolean alive() {
        return process.alive();
    }

    @Override
    public void stop() {
        process.kill9();
    }

    @Override
    public int starts() {
        return process.starts();
    }
}
