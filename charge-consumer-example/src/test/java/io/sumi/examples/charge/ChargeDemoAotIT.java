package io.sumi.examples.charge;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The packaged demo, AOT-processed at build time ({@code process-aot}), run on the JVM in AOT mode
 * ({@code -Dspring.aot.enabled=true}): the context comes from the generated bean definitions, not
 * from configuration classes. The demo charges its orders through Sumi (Kafka listener, ledger,
 * budget) and exits with 0 only when every check of its report held. A jar that was not
 * AOT-processed fails at once in this mode (no generated initializer).
 *
 * <p>Named {@code *IT}: Failsafe runs it after {@code package}, against the jar.
 */
class ChargeDemoAotIT {

    @Test
    void aotProcessedDemoChargesEveryOrderExactlyOnce() throws IOException, InterruptedException {
        Path jar = Path.of(System.getProperty("sumi.example.jar", "target/sumi-charge-consumer-example.jar"));
        assertThat(jar).exists();
        Path output = Files.createTempFile("charge-demo-aot", ".log");
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Process demo = new ProcessBuilder(List.of(java.toString(), "-Dspring.aot.enabled=true", "-jar", jar.toString()))
                .redirectErrorStream(true)
                .redirectOutput(output.toFile())
                .start();
        String log;
        boolean exited;
        try {
            // About a minute on a quiet machine (in-process Kafka and PostgreSQL, 120 orders); the
            // demo gives up by itself after ChargeDemo.TIMEOUT, so this only guards against a hang.
            exited = demo.waitFor(4, TimeUnit.MINUTES);
            if (!exited) {
                demo.destroyForcibly().waitFor();
            }
            log = Files.readString(output);
        } finally {
            Files.deleteIfExists(output);
        }
        assertThat(exited).as("the demo exits:%n%s", log).isTrue();
        assertThat(demo.exitValue()).as(log).isZero();
        // Boot's start-up line says which mode it ran in.
        assertThat(log).as(log).contains("Starting AOT-processed ChargeConsumerApplication");
        System.out.println(log.substring(Math.max(0, log.indexOf("  orders"))));
    }
}
