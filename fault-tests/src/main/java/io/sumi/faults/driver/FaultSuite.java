package io.sumi.faults.driver;

import java.nio.file.Path;

/**
 * Runs the fault suite from the command line and prints one summary line per run.
 *
 * <pre>
 * java -cp fault-tests/target/classes:$(cat fault-tests/target/app.classpath) io.sumi.faults.driver.FaultSuite [short|full] [both|guarded|control] [seed] [kafka|rabbit|cdc]
 * </pre>
 *
 * Exits 0 when the guarded run passes every invariant and the negative control shows doubles.
 */
public final class FaultSuite {

    private FaultSuite() {}

    public static void main(String[] args) {
        // The Kafka admin client would log at DEBUG on the console without a configuration.
        System.setProperty(
                "logback.configurationFile",
                System.getProperty("logback.configurationFile", "fault-driver-logback.xml"));
        String scale = args.length > 0 ? args[0] : "short";
        String which = args.length > 1 ? args[1] : "both";
        long seed = args.length > 2 ? Long.parseLong(args[2]) : System.currentTimeMillis();
        String broker = args.length > 3 ? args[3] : "kafka";
        Path buildDir = FaultDriver.defaultBuildDir();
        boolean ok = true;
        StringBuilder summary = new StringBuilder();
        if (!which.equals("guarded")) {
            FaultReport control = new FaultDriver(FaultScenario.of(broker, scale, false, seed), buildDir).run();
            summary.append(control.summaryLine()).append('\n');
            // Kafka: the control must double; RabbitMQ: double or lose (a dead-lettered message);
            // CDC: lose rows it marked dispatched unsent.
            ok &= broker.equals("cdc")
                    ? control.unpublished() > 0 && control.losses() > 0
                    : control.doubles() > 0 || (broker.equals("rabbit") && control.losses() > 0);
        }
        if (!which.equals("control")) {
            FaultReport guarded = new FaultDriver(FaultScenario.of(broker, scale, true, seed), buildDir).run();
            summary.append(guarded.summaryLine()).append('\n');
            ok &= guarded.passed();
        }
        System.out.print(summary);
        System.exit(ok ? 0 : 1);
    }
}
