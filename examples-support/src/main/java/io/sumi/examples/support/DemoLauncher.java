package io.sumi.examples.support;

import org.springframework.boot.SpringApplication;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * An example's {@code main}: starts the application; in demo mode (a {@link Demo} bean exists)
 * runs the demo, prints its report and exits with 0 when the report is good, 1 otherwise.
 * Without a demo the application keeps running as a service. With {@value #KEEP_RUNNING}{@code =true}
 * the demo's application keeps running after its report too (with its in-process services), so
 * that its Actuator endpoints can be looked at; stop it with Ctrl-C.
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

    /** Whether a demo keeps running after its report instead of exiting. */
    public static final String KEEP_RUNNING = "sumi.demo.keep-running";

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
        if (context.getEnvironment().getProperty(KEEP_RUNNING, Boolean.class, false)) {
            System.out.println(
                    "The demo keeps running (" + KEEP_RUNNING + "=true): its Actuator endpoints answer on port "
                            + context.getEnvironment().getProperty("local.server.port", "(no web server)")
                            + ". Stop it with Ctrl-C.");
            return; // The listener containers and the web server keep the JVM running.
        }
        int code = exitCode;
        System.exit(SpringApplication.exit(context, () -> code));
    }
}
