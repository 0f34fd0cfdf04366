package io.sumi.examples.support;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.beans.factory.support.DefaultSingletonBeanRegistry;
import org.springframework.boot.logging.LogLevel;
import org.springframework.boot.logging.LoggingSystem;
import org.springframework.context.ApplicationContextInitializer;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.aot.AbstractAotProcessor;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.MutablePropertySources;
import org.springframework.core.env.PropertySource;

/**
 * Decides whether an example runs as its demo, and if so starts the demo's in-process services
 * ({@link EmbeddedServices}) before any bean exists and points Spring Boot at them.
 *
 * <p>Demo mode is {@value #ENABLED}; unset, it is on unless {@code spring.kafka.bootstrap-servers}
 * or {@code spring.datasource.url} is configured (in any property source: file, environment
 * variable, command line). In demo mode Kafka, the DataSource and the example's own service always
 * are the in-process ones.
 *
 * <p><b>Demo defaults: one precedence rule.</b> The {@linkplain #demoDefaults() demo's defaults}
 * (short windows, quick retries) override the example's own packaged configuration (the
 * {@code application.properties} inside its jar, which describes a production service), and lose
 * to everything a user sets: command-line arguments, Java system properties, environment
 * variables, {@code SPRING_APPLICATION_JSON}, configuration files outside the jar
 * ({@code ./application.properties}, {@code ./config/}, {@code spring.config.location}) and a
 * test's properties. The defaults are one property source placed just above the first packaged
 * ({@code classpath:}) configuration file, or last when there is none.
 *
 * <p>Each example registers its subclass in {@code META-INF/spring.factories}, so that it runs for
 * {@code SpringApplication} and {@code @SpringBootTest} alike.
 *
 * @param <S> the type of the example's own in-process service
 */
public abstract class DemoModeInitializer<S> implements ApplicationContextInitializer<ConfigurableApplicationContext> {

    /** Whether the application runs as the demo; decided by {@link #isDemo} when unset. */
    public static final String ENABLED = "sumi.demo.enabled";

    /** The property source with {@value #ENABLED} and the in-process services' addresses; above every other. */
    static final String DEMO_MODE_SOURCE = "sumiDemoMode";

    /** The property source with the demo's defaults; see the class comment for where it stands. */
    static final String DEMO_DEFAULTS_SOURCE = "sumiDemoDefaults";

    /**
     * How Spring Boot names the property source of a configuration file found on the class path
     * ({@code Config resource 'class path resource [application.properties]' via location ...}).
     */
    private static final String PACKAGED_CONFIG_MARKER = "'class path resource [";

    /** Starts the example's own in-process service (called on another thread, while Kafka and PostgreSQL start). */
    protected abstract S startService() throws Exception;

    /** Stops the example's own in-process service. */
    protected abstract void stopService(S service) throws Exception;

    /** Spring Boot properties that point the application at the example's own service. */
    protected abstract Map<String, Object> serviceProperties(S service);

    /** The demo's settings; they follow the precedence rule of the class comment. */
    protected abstract Map<String, Object> demoDefaults();

    @Override
    public final void initialize(ConfigurableApplicationContext context) {
        ConfigurableEnvironment environment = context.getEnvironment();
        MutablePropertySources sources = environment.getPropertySources();
        if (context.getParent() != null || sources.contains(DEMO_MODE_SOURCE)) {
            return;
        }
        boolean demo = isDemo(environment);
        Map<String, Object> properties = new LinkedHashMap<>();
        properties.put(ENABLED, demo);
        if (!demo) {
            sources.addFirst(new MapPropertySource(DEMO_MODE_SOURCE, properties));
            return;
        }
        if (Boolean.getBoolean(AbstractAotProcessor.AOT_PROCESSING)) {
            // Spring AOT (process-aot) refreshes the context at build time only to record its bean
            // definitions: the demo's beans must be there (demo mode on, its defaults), but no
            // service is started, since no bean is created and the build's JVM must be able to exit.
            // The AOT-processed application runs this initializer again at start-up, and starts them.
            sources.addFirst(new MapPropertySource(DEMO_MODE_SOURCE, properties));
            addDemoDefaults(sources, new MapPropertySource(DEMO_DEFAULTS_SOURCE, new LinkedHashMap<>(demoDefaults())));
            return;
        }
        // The in-process broker's own start-up and shutdown chatter is no news in the demo.
        ClassLoader classLoader = context.getClassLoader();
        LoggingSystem logging =
                LoggingSystem.get(classLoader != null ? classLoader : DemoModeInitializer.class.getClassLoader());
        logging.setLogLevel("org.apache.kafka.controller", LogLevel.ERROR);
        logging.setLogLevel("org.apache.kafka.clients.NetworkClient", LogLevel.ERROR);
        Callable<S> start = this::startService;
        EmbeddedServices<S> services = EmbeddedServices.start(start, this::stopService);
        properties.putAll(services.springProperties());
        properties.putAll(serviceProperties(services.service()));
        sources.addFirst(new MapPropertySource(DEMO_MODE_SOURCE, properties));
        Map<String, Object> defaults = new LinkedHashMap<>(demoDefaults());
        if (!environment.getProperty(DemoLauncher.KEEP_RUNNING, Boolean.class, false)) {
            // A demo that reports and exits needs no fixed port for its Actuator endpoints: a busy
            // 8080 must not stop it. Kept running (to look at the endpoints), it uses the example's port.
            defaults.putIfAbsent("server.port", "0");
        }
        addDemoDefaults(sources, new MapPropertySource(DEMO_DEFAULTS_SOURCE, defaults));

        ConfigurableListableBeanFactory beanFactory = context.getBeanFactory();
        beanFactory.registerSingleton(EmbeddedServices.BEAN_NAME, services);
        // Registered before every other bean, so destroyed after all of them: the listener
        // containers, the producer and the DataSource are closed while the services still run.
        if (beanFactory instanceof DefaultSingletonBeanRegistry registry) {
            registry.registerDisposableBean(EmbeddedServices.BEAN_NAME, services::close);
        }
    }

    /** Puts {@code defaults} just above the first packaged configuration file, or last. */
    static void addDemoDefaults(MutablePropertySources sources, PropertySource<?> defaults) {
        for (PropertySource<?> source : sources) {
            if (source.getName().contains(PACKAGED_CONFIG_MARKER)) {
                sources.addBefore(source.getName(), defaults);
                return;
            }
        }
        sources.addLast(defaults);
    }

    /** Whether the application runs as the demo: {@value #ENABLED}, or else no Kafka and no DataSource configured. */
    public static boolean isDemo(ConfigurableEnvironment environment) {
        String enabled = environment.getProperty(ENABLED);
        if (enabled != null && !enabled.isBlank()) {
            return Boolean.parseBoolean(enabled.trim());
        }
        return !environment.containsProperty("spring.kafka.bootstrap-servers")
                && !environment.containsProperty("spring.datasource.url");
    }
}
