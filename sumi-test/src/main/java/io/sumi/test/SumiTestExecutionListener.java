package io.sumi.test;

import org.springframework.context.ApplicationContext;
import org.springframework.test.context.TestContext;
import org.springframework.test.context.support.AbstractTestExecutionListener;

/**
 * Before each test method of a Spring test whose context has the kit, makes that kit
 * {@link SumiTest#current()} and starts it afresh ({@link SumiTest#reset()}); after the method,
 * forgets it. Registered in {@code META-INF/spring.factories}, so it applies to every Spring test
 * on a classpath with the kit.
 */
public final class SumiTestExecutionListener extends AbstractTestExecutionListener {

    @Override
    public int getOrder() {
        // After dependency injection (2000) and before transactional tests' listener (4000).
        return 3500;
    }

    @Override
    public void beforeTestMethod(TestContext testContext) {
        if (!testContext.hasApplicationContext()) {
            return;
        }
        ApplicationContext context = testContext.getApplicationContext();
        SumiTest sumi = context.getBeanProvider(SumiTest.class).getIfUnique();
        SumiTest.setCurrent(sumi);
        if (sumi != null) {
            sumi.reset();
        }
    }

    @Override
    public void afterTestMethod(TestContext testContext) {
        SumiTest.setCurrent(null);
    }
}
