import './health.js';
