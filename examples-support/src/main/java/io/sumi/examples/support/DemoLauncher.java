package io.sumi.examples.support;

import org.springframework.boot.SpringApplication;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * An example's {@code main}: starts the application; in demo mode (a {@link Demo} bean exists)
 * runs the demo, prints its report and exits with 0 when the report is good, 1 otherwise.
 * Without a demo the application keeps running as a service.
 */
public final class DemoLauncher {

    /** A self-contained demo run. */
    @FunctionalInterface
    public interface Demo {

        Report run() throws Exception;
    }

    /** What a demo run found. */
    public interface Report {

        /** Whether every check of the demo held. */
        boolean ok();

        /** The summary printed at the end of the run. */
        String format();
    }

    private DemoLauncher() {}

    public static void run(Class<?> application, String[] args) {
        ConfigurableApplicationContext context = SpringApplication.run(application, args);
        Demo demo = context.getBeanProvider(Demo.class).getIfAvailable();
        if (demo == null) {
            return; // A service: the listener containers keep the JVM running until it is stopped.
        }
        int exitCode;
        try {
            Report report = demo.run();
            System.out.println(report.format());
            exitCode = report.ok() ? 0 : 1;
        } catch (Exception ex) {
            System.err.println("The demo failed: " + ex);
            ex.printStackTrace();
            exitCode = 1;
        }
        int code = exitCode;
        System.exit(SpringApplication.exit(context, () -> code));
    }
}
