/*
 * TEST FIXTURE (tests/browser/legacy.mjs, run by tests/tests/browser_legacy.rs): a stand-in for the
 * original backend's plain JS client (frontend/static/js/app.js), reproducing the behaviour that
 * companion-shapes.md A.17 documents (we do not have its source): the same base URL, token storage,
 * requests, fields read and error handling. The last section reproduces the safety-status poll that
 * the original's app-store-ui.js adds around loadDashboard(). It is not written for tradehost: it
 * must work against tradehost unchanged.
 */

// NIJA Trading Platform - frontend application

const API_BASE_URL = window.location.origin;

let authToken = localStorage.getItem('nija_token');
let currentUser = null;
let refreshInterval = null;

// ---------------------------------------------------------------------------------------------
// Start-up

document.addEventListener('DOMContentLoaded', () => {
    if (authToken) {
        loadDashboard();
    } else {
        showScreen('auth');
    }
});

// ---------------------------------------------------------------------------------------------
// API helper

async function apiRequest(endpoint, options = {}) {
    const headers = {
        'Content-Type': 'application/json',
        ...options.headers,
    };
    if (authToken) {
        headers['Authorization'] = `Bearer ${authToken}`;
    }

    const response = await fetch(`${API_BASE_URL}${endpoint}`, {
        ...options,
        headers,
    });

    if (!response.ok) {
        const error = await response.json();
        throw new Error(error.detail || 'API request failed');
    }

    return response.json();
}

// ---------------------------------------------------------------------------------------------
// Screens

function showScreen(name) {
    document.getElementById('auth-screen').classList.toggle('hidden', name !== 'auth');
    document.getElementById('dashboard-screen').classList.toggle('hidden', name !== 'dashboard');
}

function showAuthTab(tab) {
    document.getElementById('login-form').classList.toggle('hidden', tab !== 'login');
    document.getElementById('register-form').classList.toggle('hidden', tab !== 'register');
    document.getElementById('show-login').classList.toggle('active', tab === 'login');
    document.getElementById('show-register').classList.toggle('active', tab === 'register');
    hideError();
}

function showTab(tab) {
    for (const name of ['dashboard', 'brokers']) {
        document.getElementById(`${name}-tab`).classList.toggle('hidden', name !== tab);
        document.getElementById(`tab-${name}`).classList.toggle('active', name === tab);
    }
    if (tab === 'brokers') {
        loadBrokers();
    } else if (tab === 'dashboard') {
        loadStats();
        loadTradingStatus();
    }
}

function showError(message) {
    const element = document.getElementById('auth-error');
    element.textContent = message;
    element.classList.remove('hidden');
}

function hideError() {
    const element = document.getElementById('auth-error');
    element.textContent = '';
    element.classList.add('hidden');
}

// ---------------------------------------------------------------------------------------------
// Authentication

async function handleLogin(event) {
    event.preventDefault();
    hideError();

    const email = document.getElementById('login-email').value;
    const password = document.getElementById('login-password').value;

    try {
        const response = await fetch(`${API_BASE_URL}/api/auth/login`, {
            method: 'POST',
            headers: { 'Content-Type': 'application/json' },
            body: JSON.stringify({ email, password }),
        });
        const data = await response.json();

        if (response.ok) {
            authToken = data.access_token;
            localStorage.setItem('nija_token', authToken);
            await loadDashboard();
        } else {
            showError(data.detail || 'Login failed');
        }
    } catch (error) {
        console.error('Login error:', error);
        showError('Network error. Please check your connection.');
    }
}

async function handleRegister(event) {
    event.preventDefault();
    hideError();

    const email = document.getElementById('register-email').value;
    const password = document.getElementById('register-password').value;
    const subscription_tier = document.getElementById('register-tier').value;

    try {
        const response = await fetch(`${API_BASE_URL}/api/auth/register`, {
            method: 'POST',
            headers: { 'Content-Type': 'application/json' },
            body: JSON.stringify({ email, password, subscription_tier }),
        });
        const data = await response.json();

        if (response.ok) {
            authToken = data.access_token;
            localStorage.setItem('nija_token', authToken);
            await loadDashboard();
        } else {
            showError(data.detail || 'Registration failed');
        }
    } catch (error) {
        console.error('Registration error:', error);
        showError('Network error. Please check your connection.');
    }
}

function handleLogout() {
    authToken = null;
    currentUser = null;
    localStorage.removeItem('nija_token');
    if (refreshInterval) {
        clearInterval(refreshInterval);
        refreshInterval = null;
    }
    showScreen('auth');
}

// ---------------------------------------------------------------------------------------------
// Dashboard

async function loadDashboard() {
    try {
        const profile = await apiRequest('/api/user/profile');
        currentUser = profile;

        document.getElementById('user-email').textContent = profile.email;
        document.getElementById('user-tier').textContent = profile.subscription_tier;

        showScreen('dashboard');
        showTab('dashboard');

        if (refreshInterval) {
            clearInterval(refreshInterval);
        }
        refreshInterval = setInterval(() => {
            loadStats();
            loadTradingStatus();
        }, 30000);
    } catch (error) {
        console.error('Error loading dashboard:', error);
        handleLogout();
    }
}

function formatCurrency(value) {
    return new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' }).format(value);
}

async function loadStats() {
    try {
        const stats = await apiRequest('/api/pnl');

        const pnl = document.getElementById('total-pnl');
        pnl.textContent = formatCurrency(stats.total_pnl);
        pnl.className = `stat-value ${stats.total_pnl >= 0 ? 'positive' : 'negative'}`;

        document.getElementById('win-rate').textContent = `${(stats.win_rate / 100 * 100).toFixed(1)}%`;
        document.getElementById('total-trades').textContent = stats.total_trades;
        document.getElementById('active-positions').textContent = stats.active_positions;
    } catch (error) {
        console.error('Error loading stats:', error);
    }
}

function updateTradingUI(enabled) {
    document.getElementById('trading-toggle').checked = enabled;
    document.getElementById('trading-status-text').textContent = enabled ? 'Trading ON' : 'Trading OFF';
    document.getElementById('status-dot').className = `status-dot ${enabled ? 'active' : 'inactive'}`;
}

async function loadTradingStatus() {
    try {
        const status = await apiRequest('/api/status');

        updateTradingUI(status.trading_enabled);
        document.getElementById('engine-status').textContent = status.engine_status;
        document.getElementById('last-activity').textContent = status.last_activity
            ? new Date(status.last_activity).toLocaleString()
            : 'Never';
    } catch (error) {
        console.error('Error loading trading status:', error);
    }
}

async function handleTradingToggle(event) {
    const toggle = event.target;
    const enabled = toggle.checked;

    try {
        const endpoint = enabled ? '/api/start_bot' : '/api/stop_bot';
        await apiRequest(endpoint, { method: 'POST' });

        setTimeout(loadTradingStatus, 1000);
    } catch (error) {
        console.error('Failed to toggle trading:', error);
        toggle.checked = !enabled;
        alert('Failed to toggle trading. Please try again.');
    }
}

// ---------------------------------------------------------------------------------------------
// Brokers

async function loadBrokers() {
    try {
        const data = await apiRequest('/api/user/brokers');
        const list = document.getElementById('brokers-list');

        document.getElementById('broker-count').textContent = data.brokers.length;
        document.getElementById('brokers-empty').classList.toggle('hidden', data.brokers.length !== 0);

        list.innerHTML = data.brokers.map((broker) => `
            <li data-broker="${broker}">
                <span class="broker-name">${broker}</span>
                <button class="btn btn-secondary" onclick="removeBroker('${broker}')">Remove</button>
            </li>`).join('');
    } catch (error) {
        console.error('Error loading brokers:', error);
    }
}

async function handleAddBroker(event) {
    event.preventDefault();

    const broker = document.getElementById('broker-name').value;
    const api_key = document.getElementById('broker-api-key').value;
    const api_secret = document.getElementById('broker-api-secret').value;

    try {
        await apiRequest(`/api/user/brokers/${broker}`, {
            method: 'POST',
            body: JSON.stringify({ api_key, api_secret }),
        });

        event.target.reset();
        await loadBrokers();
        alert(`${broker} credentials added successfully!`);
    } catch (error) {
        console.error('Failed to add broker:', error);
        alert('Failed to add broker credentials. Please try again.');
    }
}

async function removeBroker(broker) {
    if (!confirm(`Are you sure you want to remove ${broker} credentials?`)) {
        return;
    }

    try {
        await apiRequest(`/api/user/brokers/${broker}`, { method: 'DELETE' });
        await loadBrokers();
    } catch (error) {
        console.error('Failed to remove broker:', error);
        alert('Failed to remove broker credentials. Please try again.');
    }
}

// ---------------------------------------------------------------------------------------------
// From the original's app-store-ui.js: after loadDashboard() (even when it failed and logged
// out), GET /api/safety/status without a token, at once and then every 5 s. A failed answer is
// only logged; an answer overrides the trading toggle.

let safetyInterval = null;

function applySafetyStatus(status) {
    const ui = status.ui_indicators || {};
    const toggle = document.getElementById('trading-toggle');
    toggle.checked = Boolean(status.trading_allowed);
    toggle.disabled = ui.allow_toggle === false;

    const banner = document.getElementById('safety-banner');
    const show = ui.show_emergency_banner || ui.show_simulation_banner || ui.show_app_store_banner;
    banner.textContent = status.mode_display || status.idle_message || '';
    banner.classList.toggle('hidden', !show);
}

async function updateSafetyStatus() {
    try {
        const response = await fetch(`${API_BASE_URL}/api/safety/status`);
        if (!response.ok) {
            console.log('Safety status not available:', response.status);
            return;
        }
        applySafetyStatus(await response.json());
    } catch (error) {
        console.log('Safety status check failed:', error);
    }
}

function startSafetyStatusUpdates() {
    if (safetyInterval) {
        clearInterval(safetyInterval);
    }
    updateSafetyStatus();
    safetyInterval = setInterval(updateSafetyStatus, 5000);
}

(function wrapLoadDashboard() {
    const originalLoadDashboard = window.loadDashboard;
    window.loadDashboard = async function (...args) {
        try {
            await originalLoadDashboard.apply(this, args);
        } finally {
            startSafetyStatusUpdates();
        }
    };
})();
